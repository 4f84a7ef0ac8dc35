import Foundation
import Glibc

// What the tests and the benchmarks set up beside the player on this machine: TCP on loopback,
// and null sinks of the PulseAudio server they run against. Not part of the product.

/// Failure of a loopback socket or a `pactl` call, with what went wrong.
public struct LocalServerError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}

/// A TCP port on 127.0.0.1 nothing listens on now (the kernel's pick for port 0).
public func freeLoopbackPort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw LocalServerError("socket: \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
    }
    guard bound else { throw LocalServerError("no free port: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// A TCP connection to 127.0.0.1:`port`: its descriptor, for the caller to close.
public func connectLoopback(port: Int) throws -> Int32 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw LocalServerError("socket: \(String(cString: strerror(errno)))") }
    var address = loopbackAddress(port: port)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else {
        let reason = String(cString: strerror(errno))
        close(descriptor)
        throw LocalServerError("127.0.0.1:\(port): \(reason)")
    }
    return descriptor
}

private func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    return address
}

/// A null sink loaded into the PulseAudio server `PULSE_SERVER` names (a second room, a sink to
/// move a stream to), unloaded by `unload()` or when released.
public final class LoadedNullSink {
    public let name: String
    /// Its monitor source, for a `MonitorRecorder`.
    public var monitor: String { name + ".monitor" }
    private let module: String
    private let environment: [String: String]
    private var loaded = true

    /// `sampleRate`: the sink's rate, in stereo (the server's default when nil).
    public init(name: String, sampleRate: Int? = nil) throws {
        self.name = name
        environment = ["PULSE_SERVER": ProcessInfo.processInfo.environment["PULSE_SERVER"] ?? ""]
        let arguments = ["load-module", "module-null-sink", "sink_name=\(name)"]
            + (sampleRate.map { ["rate=\($0)", "channels=2"] } ?? [])
        let (code, out) = try runTool("/usr/bin/pactl", arguments, environment: environment)
        guard code == 0 else { throw LocalServerError("pactl load-module (\(name)): \(out)") }
        module = out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit { unload() }

    /// Unloads it (once).
    public func unload() {
        guard loaded else { return }
        loaded = false
        _ = try? runTool("/usr/bin/pactl", ["unload-module", module], environment: environment)
    }
}
