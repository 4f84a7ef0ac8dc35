import Foundation
import Glibc
import MusicKitCore

/// A connection to an MPD socket (musickitd's, or a real MPD's), spoken by hand: lines out, the reply read until it
/// is complete (`OK`, or an `ACK`, unless told otherwise).
public final class MPDSocket: Sendable {
    private let socket: Int32

    public init(path: String) throws { socket = try SystemPlayerWire.connect(to: path) }

    /// A connection to 127.0.0.1:`port`.
    public init(port: UInt16) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(socket); throw POSIXError(.ECONNREFUSED) }
    }
    deinit { close(socket) }

    /// The server's first line (MPD's `OK MPD VERSION`).
    public func greeting() -> String { exchange("", until: { $0.hasSuffix("\n") }) }

    public func exchange(_ text: String, until done: (String) -> Bool = { $0.hasSuffix("OK\n") || $0.contains("ACK [") }) -> String {
        _ = text.withCString { send(socket, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var reply = ""
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !done(reply) {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            reply += String(decoding: buffer[0..<count], as: UTF8.self)
        }
        return reply
    }
}
