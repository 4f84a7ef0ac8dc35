import Foundation
import Glibc

// The system player's wire: a Unix stream socket in the runtime directory, messages framed as
// a 4-byte big-endian length and that many bytes of JSON (at most `maximumMessageBytes`),
// every message carrying the protocol version. Used by `SystemMusicPlayer` (the client) and by
// `SystemPlayerServer` (in musickitd).

/// A framing or transport failure on the system player's socket.
package struct SystemPlayerWireError: Error, CustomStringConvertible {
    package let description: String
    package init(description: String) { self.description = description }
}

package enum SystemPlayerWire {
    /// The protocol version; a peer speaking another one is answered with an error.
    package static let version = 1
    /// Messages longer than this are refused (the connection is dropped).
    static let maximumMessageBytes = 4 << 20

    /// The socket's path in `runtimeDirectory`.
    package static func socketURL(_ environment: MusicKitEnvironment) -> URL {
        environment.runtimeDirectory.appendingPathComponent("player.sock")
    }

    /// The daemon's MPD protocol socket beside it (`MPD_HOST=<this path> mpc status`).
    package static func mpdSocketURL(_ environment: MusicKitEnvironment) -> URL {
        environment.runtimeDirectory.appendingPathComponent("mpd.sock")
    }

    /// The file the daemon locks while it runs (one daemon per runtime directory).
    package static func lockURL(_ environment: MusicKitEnvironment) -> URL {
        environment.runtimeDirectory.appendingPathComponent("musickitd.lock")
    }

    static func address(_ path: String) throws -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemPlayerWireError(description: "socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        return address
    }

    /// A connected socket to `path`; throws with errno's text when nothing listens there.
    package static func connect(to path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SystemPlayerWireError(description: "socket: \(String(cString: strerror(errno)))") }
        var address = try address(path)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw SystemPlayerWireError(description: "\(path): \(reason)")
        }
        return descriptor
    }

    /// A listening socket at `path` (0600; a socket file left there is replaced).
    package static func listen(at path: String) throws -> Int32 {
        unlink(path)
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = try address(path)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard listener >= 0, bound == 0, chmod(path, 0o600) == 0, Glibc.listen(listener, 128) == 0 else {
            throw SystemPlayerWireError(description: "\(path): \(String(cString: strerror(errno)))")
        }
        return listener
    }

    /// How many descriptors systemd handed this process (socket activation), from 3 on; 0 when
    /// none. Read without opening anything, so musickitd's start can keep them open.
    package static func activatedDescriptorCount() -> Int32 {
        guard let pid = getenv("LISTEN_PID").flatMap({ Int32(String(cString: $0)) }), pid == getpid(),
              let count = getenv("LISTEN_FDS").flatMap({ Int32(String(cString: $0)) }), count > 0, count < 64 else { return 0 }
        return count
    }

    /// The listening sockets systemd handed over (socket activation: `LISTEN_PID` is this
    /// process, `LISTEN_FDS` descriptors from 3 on), by the path each is bound to. Taken once:
    /// the variables are removed, so that no child takes them too. Empty when not activated.
    package static func activatedListeners() -> [String: Int32] {
        let count = activatedDescriptorCount()
        for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) }
        var listeners: [String: Int32] = [:]
        for descriptor in 3..<(3 + count) {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            var address = sockaddr_un()
            var length = socklen_t(MemoryLayout<sockaddr_un>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            guard named == 0, address.sun_family == sa_family_t(AF_UNIX) else { continue }
            let path = withUnsafeBytes(of: address.sun_path) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            listeners[path] = descriptor
        }
        return listeners
    }

    /// A TCP socket listening on 127.0.0.1:`port` (only this machine can connect).
    package static func listenOnLoopback(port: UInt16) throws -> Int32 {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var reuse: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian  // 127.0.0.1
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard listener >= 0, bound == 0, Glibc.listen(listener, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            if listener >= 0 { close(listener) }
            throw SystemPlayerWireError(description: "127.0.0.1:\(port): \(reason)")
        }
        return listener
    }

    /// Whether the peer of an accepted connection runs as this process's user (`SO_PEERCRED`).
    package static func peerIsThisUser(_ descriptor: Int32) -> Bool {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return false }
        return credentials.uid == getuid()
    }

    /// A message: a JSON object, built and read with `JSONValue` (written and parsed by hand:
    /// JSONSerialization's `Any` casts cost a short-lived client, `musickit next`, over a millisecond).
    package typealias Message = [String: JSONValue]

    /// Writes one framed message.
    static func send(_ object: Message, on descriptor: Int32) throws {
        try frame(object).withUnsafeBytes { try sendAll($0, on: descriptor) }
    }

    /// `object` with the version, as it goes on the wire: its length (4 bytes, big-endian), then
    /// the JSON (keys sorted).
    package static func frame(_ object: Message) throws -> [UInt8] {
        var message = object
        message["v"] = JSONValue(version)
        var frame = [UInt8](repeating: 0, count: 4)
        frame += JSONValue.object(message).serialized.utf8
        let length = frame.count - 4
        guard length <= maximumMessageBytes else { throw SystemPlayerWireError(description: "message of \(length) bytes is too long") }
        frame[0] = UInt8(truncatingIfNeeded: length >> 24)
        frame[1] = UInt8(truncatingIfNeeded: length >> 16)
        frame[2] = UInt8(truncatingIfNeeded: length >> 8)
        frame[3] = UInt8(truncatingIfNeeded: length)
        return frame
    }

    /// Writes all of `bytes` (partial writes, EINTR), without SIGPIPE when the peer is gone.
    package static func sendAll(_ bytes: UnsafeRawBufferPointer, on descriptor: Int32) throws {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if written < 0 {
                if errno == EINTR { continue }
                throw SystemPlayerWireError(description: "send: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    /// Writes all of `bytes` if the socket takes them at once; false when it would have to wait
    /// (the peer is not reading: what went out may be part of a frame, so the caller drops the
    /// peer) or the peer is gone.
    package static func sendWithoutWaiting(_ bytes: UnsafeRawBufferPointer, on descriptor: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.send(descriptor, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// Reads one framed message; nil at the end of the stream (the peer closed between
    /// messages). A truncated, oversized or malformed message, or another version, throws.
    package static func receive(on descriptor: Int32) throws -> Message? {
        var header = [UInt8](repeating: 0, count: 4)
        guard try readFully(descriptor, &header, allowEnd: true) else { return nil }
        let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
        guard length <= maximumMessageBytes else {
            throw SystemPlayerWireError(description: "a message of \(length) bytes is over the limit of \(maximumMessageBytes)")
        }
        // Grown as the bytes arrive: a header alone reserves no more than the first piece.
        var body: [UInt8] = []
        body.reserveCapacity(min(length, 65_536))
        while body.count < length {
            var piece = [UInt8](repeating: 0, count: min(length - body.count, max(body.count, 65_536)))
            _ = try readFully(descriptor, &piece, allowEnd: false)
            body += piece
        }
        guard let object = (try? JSONValue.parse(Data(body)))?.object else {
            throw SystemPlayerWireError(description: "a message that is not a JSON object")
        }
        guard object["v"]?.int == version else {
            throw SystemPlayerWireError(description: "protocol version \(object["v"]?.serialized ?? "none") (this side speaks \(version))")
        }
        return object
    }

    /// Fills `buffer`; false when the stream ended before its first byte (and `allowEnd`).
    private static func readFully(_ descriptor: Int32, _ buffer: inout [UInt8], allowEnd: Bool) throws -> Bool {
        var offset = 0
        while offset < buffer.count {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + offset, $0.count - offset, 0) }
            if count < 0 {
                if errno == EINTR { continue }
                throw SystemPlayerWireError(description: "receive: \(String(cString: strerror(errno)))")
            }
            if count == 0 {
                if offset == 0 && allowEnd { return false }
                throw SystemPlayerWireError(description: "the message was cut off after \(offset) of \(buffer.count) bytes")
            }
            offset += count
        }
        return true
    }
}

// MARK: - Values on the wire

extension SystemPlayerWire {
    /// A queue's contents as parts: made entries (resource, start and end times) and the lazy
    /// ranges of albums and playlists (container and range), so that a long playlist travels
    /// as one container, not as its tracks.
    package static func parts(of contents: QueueContents) -> JSONValue {
        .array(contents.segmentsForWire.map { segment -> JSONValue in
            switch segment {
            case .entries(let entries):
                return ["entries": .array(entries.map { entry -> JSONValue in
                    var object: Message = ["resource": entry.resource.jsonValue]
                    if let container = entry.container { object["container"] = container.jsonValue }
                    if let start = entry.startTime { object["start"] = .number(start) }
                    if let end = entry.endTime { object["end"] = .number(end) }
                    return .object(object)
                })]
            case .lazy(let tracks, let range):
                return ["container": tracks.container.jsonValue, "from": JSONValue(range.lowerBound),
                        "to": JSONValue(range.upperBound)]
            }
        })
    }

    /// A resource from a JSON object; nil when it is not one.
    static func resource(_ value: JSONValue?) -> ResourceObject? {
        guard let value, value.object != nil else { return nil }
        return ResourceObject(json: value)
    }

    /// Contents from parts; a part that is not well formed throws, naming it.
    package static func contents(from parts: JSONValue?) throws -> QueueContents {
        var made: [QueueContents.Part] = []
        for (index, part) in (parts?.array ?? []).enumerated() {
            if let entries = part["entries"]?.array {
                made.append(.segment(.entries(try entries.map { object in
                    guard let resource = resource(object["resource"]) else {
                        throw SystemPlayerWireError(description: "queue part \(index): an entry without a resource")
                    }
                    return MusicPlayer.Queue.Entry(resource: resource, container: SystemPlayerWire.resource(object["container"]),
                                                   startTime: object["start"]?.number, endTime: object["end"]?.number)
                })))
            } else if let container = resource(part["container"]) {
                let tracks = PlaybackServices.tracks(of: container)
                let from = min(max(part["from"]?.int ?? 0, 0), tracks.count)
                let to = min(max(part["to"]?.int ?? tracks.count, from), tracks.count)
                made.append(.segment(.lazy(tracks, from..<to)))
            } else {
                throw SystemPlayerWireError(description: "queue part \(index) is neither entries nor a container")
            }
        }
        return QueueContents(parts: made)
    }
}

/// `struct ucred` (Glibc's module leaves it out without _GNU_SOURCE): what SO_PEERCRED fills in.
private struct PeerCredentials {
    var pid: pid_t = 0
    var uid: uid_t = 0
    var gid: gid_t = 0
}

extension SystemPlayerWire {
    package static func name(of status: MusicPlayer.PlaybackStatus) -> String {
        switch status {
        case .interrupted: "interrupted"
        case .paused: "paused"
        case .playing: "playing"
        case .seekingBackward: "seekingBackward"
        case .seekingForward: "seekingForward"
        case .stopped: "stopped"
        }
    }

    package static func status(_ name: String) -> MusicPlayer.PlaybackStatus {
        switch name {
        case "interrupted": .interrupted
        case "paused": .paused
        case "playing": .playing
        case "seekingBackward": .seekingBackward
        case "seekingForward": .seekingForward
        default: .stopped
        }
    }

    package static func name(of mode: MusicPlayer.RepeatMode) -> String {
        switch mode { case .all: "all"; case .none: "none"; case .one: "one" }
    }

    package static func repeatMode(_ name: String) -> MusicPlayer.RepeatMode {
        switch name { case "all": .all; case "one": .one; default: .none }
    }
}

/// The system player's own settings (`<config>/musickitd.json`), read by musickitd when it
/// starts: the device it plays on when `MUSICKIT_AUDIO_DEVICE` does not say (`musickit daemon
/// device NAME`), so that it survives a restart, a reboot, and a daemon started by any client.
package struct SystemPlayerSettings: Codable, Equatable, Sendable {
    /// An engine device name (`snapcast:/tmp/snapfifo`, `pulseaudio:SINK`, `hw:0`…); nil: the default.
    package var device: String?
    /// The loopback TCP port musickitd also serves MPD's protocol on (6600 is MPD's: phone apps,
    /// Snapcast's meta_mpd.py); nil: the socket only.
    package var mpdPort: UInt16?

    package init(device: String? = nil, mpdPort: UInt16? = nil) {
        self.device = device
        self.mpdPort = mpdPort
    }

    static func file(_ environment: MusicKitEnvironment) -> SettingsFile<SystemPlayerSettings> {
        SettingsFile(url: environment.configDirectory.appendingPathComponent("musickitd.json"))
    }

    /// The settings, or the defaults when none were saved (an unreadable file is moved aside
    /// and reported).
    package static func load(_ environment: MusicKitEnvironment = .current) -> (settings: SystemPlayerSettings, problem: SettingsFileError?) {
        var problem: SettingsFileError?
        let settings = file(environment).read(fallback: SystemPlayerSettings(), problem: &problem)
        return (settings, problem)
    }

    @discardableResult
    package static func update(_ environment: MusicKitEnvironment = .current,
                               _ change: (inout SystemPlayerSettings) throws -> Void) throws -> SystemPlayerSettings {
        try file(environment).update(fallback: SystemPlayerSettings(), change)
    }
}
