import Glibc

/// A C library opened when first needed (dlopen) rather than linked, so that a program that
/// does not use it does not load it and what it depends on at every start (the CLI's commands
/// that only talk to the daemon, for instance). The engine's decoder and resampler open
/// libsndfile (with its eight codec libraries), FFmpeg's libraries and libsoxr this way;
/// MusicKit opens libsystemd for musickitd's MPRIS, libcrypto and libssl for the Apple Music
/// API, libpng and libchafa for artwork. The wrapper of each library keeps a
/// table of the functions it calls, filled from here once.
package struct DynamicLibrary: @unchecked Sendable {
    // @unchecked: a dlopen handle is usable from any thread; it is never closed.
    private let handle: UnsafeMutableRawPointer
    package let name: String

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Opens `name` (a soname such as "libcrypto.so.3").
    package init(_ name: String) throws(Failure) {
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            throw Failure(description: "\(name) could not be opened (\(dlerror().map { String(cString: $0) } ?? "not found"))")
        }
        self.handle = handle
        self.name = name
    }

    /// The C function `symbol`, as the function type `T` (a `@convention(c)` type matching its
    /// declaration in the library's header).
    package func function<T>(_ symbol: String) throws(Failure) -> T {
        guard let address = dlsym(handle, symbol) else { throw Failure(description: "\(name) has no \(symbol)") }
        return unsafeBitCast(address, to: T.self)
    }

    /// Opens `name` and makes a wrapper's table of its functions with `make`, which looks each
    /// one up by name: `DynamicLibrary.table("libsoxr.so.0") { function in LibSoxr(create: try function("soxr_create"), …) }`.
    package static func table<Table>(_ name: String,
                                     _ make: (_ function: Lookup) throws(Failure) -> Table) -> Result<Table, Failure> {
        do throws(Failure) {
            return .success(try make(Lookup(library: try DynamicLibrary(name))))
        } catch {
            return .failure(error)
        }
    }

    /// Looks a library's functions up by name (see `table`).
    package struct Lookup {
        let library: DynamicLibrary

        package func callAsFunction<T>(_ symbol: String) throws(Failure) -> T { try library.function(symbol) }
    }
}
