#include "actorgrad/actors/torch/detail/plt_slots.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace actorgrad::torch::detail {

namespace {

struct Request {
  const char* library;
  const char* symbol;
  void* replacement;
  void** original;
  bool found = false;
};

/// A pointer of the dynamic section: glibc relocates most of them in
/// place when it loads the object, some loaders do not.
template <class T>
T* dyn_ptr(const dl_phdr_info& info, ElfW(Addr) value) {
  return reinterpret_cast<T*>(value < info.dlpi_addr ? value + info.dlpi_addr : value);
}

/// Stores `value` in `slot`, made writable for the store; read-only again
/// when the slot is in the RELRO range [relro_begin, relro_end).
void write_slot(void** slot, void* value, std::uintptr_t relro_begin, std::uintptr_t relro_end) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto at = reinterpret_cast<std::uintptr_t>(slot);
  void* first = reinterpret_cast<void*>(at & ~(page - 1));
  if (mprotect(first, page, PROT_READ | PROT_WRITE) != 0)
    throw std::runtime_error("actorgrad: cannot make a PLT slot writable (mprotect failed)");
  __atomic_store_n(slot, value, __ATOMIC_RELEASE);
  if (at >= relro_begin && at < relro_end)
    mprotect(first, page, PROT_READ);
}

int visit(dl_phdr_info* info, size_t, void* data) {
  auto& request = *static_cast<Request*>(data);
  if (!info->dlpi_name || !std::strstr(info->dlpi_name, request.library))
    return 0;
  const ElfW(Dyn)* dynamic = nullptr;
  std::uintptr_t relro_begin = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC)
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + ph.p_vaddr);
    else if (ph.p_type == PT_GNU_RELRO) {
      relro_begin = info->dlpi_addr + ph.p_vaddr;
      relro_end = relro_begin + ph.p_memsz;
    }
  }
  if (!dynamic)
    return 0;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* jmprel = nullptr;
  std::size_t jmprel_size = 0;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
    case DT_SYMTAB: symtab = dyn_ptr<const ElfW(Sym)>(*info, d->d_un.d_ptr); break;
    case DT_STRTAB: strtab = dyn_ptr<const char>(*info, d->d_un.d_ptr); break;
    case DT_JMPREL: jmprel = dyn_ptr<const ElfW(Rela)>(*info, d->d_un.d_ptr); break;
    case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
    default: break;
    }
  }
  if (!symtab || !strtab || !jmprel)
    return 0;
  for (std::size_t i = 0; i < jmprel_size / sizeof(ElfW(Rela)); ++i) {
    const ElfW(Rela)& r = jmprel[i];
    if (ELF64_R_TYPE(r.r_info) != R_X86_64_JUMP_SLOT)
      continue;
    if (std::strcmp(strtab + symtab[ELF64_R_SYM(r.r_info)].st_name, request.symbol) != 0)
      continue;
    auto** slot = reinterpret_cast<void**>(info->dlpi_addr + r.r_offset);
    void* bound = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    request.found = true;
    if (bound == request.replacement)
      continue; // redirected before
    if (!*request.original)
      __atomic_store_n(request.original, bound, __ATOMIC_RELEASE);
    write_slot(slot, request.replacement, relro_begin, relro_end);
  }
  return 0;
}

} // namespace

bool redirect_plt_slot(const char* library, const char* symbol, void* replacement,
                       void** original) {
  Request request{library, symbol, replacement, original};
  dl_iterate_phdr(&visit, &request);
  return request.found;
}

} // namespace actorgrad::torch::detail
