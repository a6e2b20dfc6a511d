//! NativeHost: the only code that touches files, processes and sockets for tools, enforcing grants
