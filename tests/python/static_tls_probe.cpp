// A library with 1 KiB of initial-exec thread-locals, as other Python
// extensions have: loaded with dlopen, it needs that much of the static TLS
// that glibc sets aside for such libraries. torch leaves 1,536-2,047 bytes
// of it; actorgrad.torch must take none (Note [Thread-locals in shared
// objects] in CMakeLists.txt). tests/python/test_python_api.py loads it
// after them.

[[gnu::tls_model("initial-exec")]] thread_local char probe_tls[1024];

extern "C" char* actorgrad_static_tls_probe() { return probe_tls; }
