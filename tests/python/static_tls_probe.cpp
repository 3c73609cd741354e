// A library with 128 bytes of initial-exec thread-locals, as other Python
// extensions have: loaded with dlopen, it needs that much of the static TLS
// that glibc sets aside for such libraries, which torch and actorgrad.torch
// share with it (Note [Node table memory] in libengine/engine/node_table.h).
// tests/python/test_python_api.py loads it after them.

[[gnu::tls_model("initial-exec")]] thread_local char probe_tls[128];

extern "C" char* actorgrad_static_tls_probe() { return probe_tls; }
