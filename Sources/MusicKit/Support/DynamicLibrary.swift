import Glibc

/// A C library opened when first needed (dlopen) rather than linked: the wrappers of libraries
/// that only some programs use (libsystemd for musickitd's MPRIS, libcrypto for developer
/// tokens) open theirs this way, so that every other program using MusicKit — the CLI's start
/// among them — does not load them and what they depend on.
struct DynamicLibrary: @unchecked Sendable {
    // @unchecked: a dlopen handle is usable from any thread; it is never closed.
    private let handle: UnsafeMutableRawPointer
    let name: String

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Opens `name` (a soname such as "libcrypto.so.3").
    init(_ name: String) throws(Failure) {
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            throw Failure(description: "\(name) could not be opened (\(dlerror().map { String(cString: $0) } ?? "not found"))")
        }
        self.handle = handle
        self.name = name
    }

    /// The C function `symbol`, as the function type `T` (a `@convention(c)` type matching its
    /// declaration in the library's header).
    func function<T>(_ symbol: String) throws(Failure) -> T {
        guard let address = dlsym(handle, symbol) else { throw Failure(description: "\(name) has no \(symbol)") }
        return unsafeBitCast(address, to: T.self)
    }
}
