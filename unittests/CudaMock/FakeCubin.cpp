//===- FakeCubin.cpp - the FAKE driver's reading of NVRTC's CUBIN ---------===//
//
// Part of the fake libcuda.so.1 (FakeCuda.cpp): what cuModuleLoadData needs
// of a CUBIN (an ELF image): the SM architecture, the kernels (entry-point
// symbols), their parameter sizes (.nv.info.<kernel>) and static shared
// memory (.nv.shared.<kernel>).
//
//===----------------------------------------------------------------------===//

#include "FakeCubin.h"

#include <elf.h>

#include <cstring>

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

namespace fakecuda {
namespace {

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidImage = 200;
constexpr CUresult kNoBinaryForGpu = 209;

// Limits that keep a corrupt header from sending the reader far away: the
// image's size is not passed to cuModuleLoadData, so it is trusted.
constexpr uint64_t kMaxImageBytes = 64ull << 20;
constexpr uint8_t kStoCudaEntry = 0x10; // st_other of a kernel's symbol
constexpr uint8_t kEiattrKparamInfo = 0x17;
constexpr uint8_t kEifmtSval = 0x04;

template <typename T> T readAt(const unsigned char *base, uint64_t offset) {
  T value;
  std::memcpy(&value, base + offset, sizeof value);
  return value;
}

/// The parameter sizes, by ordinal, from a kernel's .nv.info section: a list
/// of (format, attribute, value) entries on a 4-byte grid, where format 4
/// (EIFMT_SVAL) carries a 16-bit size and that many bytes, and the others
/// one 16-bit value. EIATTR_KPARAM_INFO (0x17) describes one parameter:
/// u32 index, u16 ordinal, u16 offset, u32 flags with the size in bits
/// 18-31.
bool readParams(const unsigned char *info, uint64_t size,
                std::vector<uint32_t> &sizes, std::string &why) {
  uint64_t pos = 0;
  while (pos + 4 <= size) {
    uint8_t format = info[pos], attribute = info[pos + 1];
    if (format != kEifmtSval) {
      if (format < 1 || format > 3) {
        why = "unknown .nv.info entry format " + std::to_string(format);
        return false;
      }
      pos += 4;
      continue;
    }
    uint16_t length = readAt<uint16_t>(info, pos + 2);
    if (pos + 4 + length > size) {
      why = ".nv.info entry past the end of its section";
      return false;
    }
    if (attribute == kEiattrKparamInfo && length >= 12) {
      uint16_t ordinal = readAt<uint16_t>(info, pos + 8);
      uint32_t flags = readAt<uint32_t>(info, pos + 12);
      if (ordinal >= sizes.size())
        sizes.resize(ordinal + 1, 0);
      sizes[ordinal] = (flags >> 18) & 0x3fff;
    }
    pos += 4 + length;
  }
  return true;
}

/// Reads the CUBIN at `image` into `module` for a device of compute
/// capability `sm` (80 for 8.0); on failure sets `why` and returns the
/// driver's error.
} // namespace

CUresult readCubin(const unsigned char *image, int sm,
                   std::vector<CubinKernel> &kernels, std::string &why) {
  if (std::memcmp(image, ELFMAG, SELFMAG) != 0) {
    why = "not an ELF image";
    return kInvalidImage;
  }
  Elf64_Ehdr header;
  std::memcpy(&header, image, sizeof header);
  if (header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB) {
    why = "not a little-endian ELF64 image";
    return kInvalidImage;
  }
  if (header.e_machine != EM_CUDA) {
    why = "ELF machine " + std::to_string(header.e_machine) + " is not EM_CUDA";
    return kInvalidImage;
  }
  // The SM number: bits 8-15 of e_flags from ELF ABI version 8 (CUDA 12.8
  // and later), bits 0-7 before.
  int imageSm = header.e_ident[EI_ABIVERSION] >= 8
                    ? int((header.e_flags >> 8) & 0xff)
                    : int(header.e_flags & 0xff);
  if (imageSm != sm) {
    why = "the CUBIN is for sm_" + std::to_string(imageSm) +
          ", the device is sm_" + std::to_string(sm);
    return kNoBinaryForGpu;
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr) || header.e_shnum == 0 ||
      header.e_shstrndx >= header.e_shnum ||
      header.e_shoff + uint64_t(header.e_shnum) * sizeof(Elf64_Shdr) >
          kMaxImageBytes) {
    why = "bad section header table";
    return kInvalidImage;
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  std::memcpy(sections.data(), image + header.e_shoff,
              sections.size() * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr &section : sections)
    if (section.sh_type != SHT_NOBITS &&
        section.sh_offset + section.sh_size > kMaxImageBytes) {
      why = "a section lies past any plausible image size";
      return kInvalidImage;
    }
  const Elf64_Shdr &names = sections[header.e_shstrndx];
  auto sectionName = [&](const Elf64_Shdr &section) {
    return std::string(reinterpret_cast<const char *>(image + names.sh_offset +
                                                      section.sh_name));
  };
  auto findSection = [&](const std::string &name) -> const Elf64_Shdr * {
    for (const Elf64_Shdr &section : sections)
      if (sectionName(section) == name)
        return &section;
    return nullptr;
  };

  const Elf64_Shdr *symtab = nullptr;
  for (const Elf64_Shdr &section : sections)
    if (section.sh_type == SHT_SYMTAB)
      symtab = &section;
  if (!symtab || symtab->sh_entsize != sizeof(Elf64_Sym) ||
      symtab->sh_link >= sections.size()) {
    why = "no symbol table";
    return kInvalidImage;
  }
  const Elf64_Shdr &strings = sections[symtab->sh_link];
  for (uint64_t i = 0; i < symtab->sh_size / sizeof(Elf64_Sym); ++i) {
    Elf64_Sym symbol =
        readAt<Elf64_Sym>(image, symtab->sh_offset + i * sizeof(Elf64_Sym));
    if (ELF64_ST_TYPE(symbol.st_info) != STT_FUNC ||
        !(symbol.st_other & kStoCudaEntry))
      continue;
    CubinKernel kernel;
    kernel.name = reinterpret_cast<const char *>(image + strings.sh_offset +
                                                 symbol.st_name);
    if (const Elf64_Shdr *info = findSection(".nv.info." + kernel.name))
      if (!readParams(image + info->sh_offset, info->sh_size, kernel.paramSizes,
                      why))
        return kInvalidImage;
    if (const Elf64_Shdr *shared = findSection(".nv.shared." + kernel.name))
      kernel.staticShared = uint32_t(shared->sh_size);
    kernels.push_back(std::move(kernel));
  }
  return kSuccess;
}

} // namespace fakecuda
