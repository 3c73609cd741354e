#pragma once
/// @file plt_slots.h
/// Redirects the calls a loaded shared library makes to one of the
/// functions it imports, by rewriting the library's PLT slot (its GOT
/// entry of type R_X86_64_JUMP_SLOT) for that function.

namespace actorgrad::torch::detail {

/// Writes `replacement` into the PLT slot of `symbol` (a mangled name) of
/// every loaded object whose file name contains `library` (e.g.
/// "libtorch_cpu.so"), after storing in `*original` what the first such
/// slot held (the function the loader bound). Returns false when no loaded
/// object of that name imports `symbol` (nothing written). The slot is made
/// writable for the write and read-only again when it lies in the object's
/// RELRO segment. Calls made through the slot meanwhile go to one or the
/// other.
bool redirect_plt_slot(const char* library, const char* symbol, void* replacement, void** original);

} // namespace actorgrad::torch::detail
