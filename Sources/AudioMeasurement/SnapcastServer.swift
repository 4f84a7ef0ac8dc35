import Foundation
import Glibc

/// A private Snapcast setup for the tests and the benchmarks (issue #46): snapserver with a pipe
/// source at 44.1 kHz on loopback ports the kernel picked (its JSON-RPC control on
/// `controlPort`, `request`), and snapclients ("rooms") playing it into sinks of the PulseAudio
/// server `PULSE_SERVER` names. Its processes are stopped by their own PIDs (`stop`, clients
/// first); logs are beside the FIFO.
public final class SnapcastServer {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The pipe source's FIFO, what `snapcast:FIFO` writes into.
    public let fifo: String
    /// snapserver's process.
    public var pid: pid_t { server.processIdentifier }
    /// snapserver's JSON-RPC port (what Snapweb and the apps speak, over TCP here).
    public let controlPort: Int
    /// The folder of the FIFO and the logs.
    public let folder: URL
    private let streamPort: Int
    private let log: String
    private let server: Process
    private var clients: [Int: Process] = [:]

    /// Whether snapserver and snapclient are installed (scripts/setup-system installs them).
    public static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/snapserver")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/snapclient")
    }

    /// Starts snapserver in `directory` (with `bufferMilliseconds` of buffer and `codec` to its
    /// clients, snapserver's defaults — 1,000 ms, FLAC — when nil; `controlScript`: the stream's
    /// control script, an executable snapserver runs with `--stream=… --snapcast-port=…
    /// --snapcast-host=…`) and waits for its FIFO.
    public init(directory: URL, bufferMilliseconds: Int? = nil, codec: String? = nil, controlScript: String? = nil) throws {
        folder = directory.appendingPathComponent("snapcast-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        fifo = folder.appendingPathComponent("fifo").path
        log = folder.appendingPathComponent("snapserver.log").path
        streamPort = try freeLoopbackPort()
        controlPort = try freeLoopbackPort()
        let script = controlScript.map { "&controlscript=\($0)" } ?? ""
        server = try Self.launch(["/usr/bin/snapserver", "-c", "/dev/null", "--server.datadir=\(folder.path)", "--http.enabled=0",
                                  "--tcp.port=\(controlPort)", "--tcp.bind_to_address=127.0.0.1",
                                  "--stream.port=\(streamPort)", "--stream.bind_to_address=127.0.0.1",
                                  "--stream.source=pipe://\(fifo)?name=default&sampleformat=44100:16:2&mode=create\(script)",
                                  "--logging.filter=*:notice"]
                                 + (bufferMilliseconds.map { ["--stream.buffer=\($0)"] } ?? []) + (codec.map { ["--stream.codec=\($0)"] } ?? []),
                                 log: log)
        do {
            try Self.waitUntil("snapserver's FIFO at \(fifo)") { FileManager.default.fileExists(atPath: fifo) }
        } catch {
            stop()
            throw error
        }
    }

    /// Starts a snapclient as room `instance`, playing into `sink` (nil: the server's default
    /// sink), and waits until snapserver has its connection.
    public func addRoom(_ instance: Int, sink: String? = nil) throws {
        guard let pulseServer = ProcessInfo.processInfo.environment["PULSE_SERVER"] else {
            throw Failure(description: "PULSE_SERVER is not set: the rooms play into that server's sinks")
        }
        let before = connections()
        clients[instance] = (try Self.launch(["/usr/bin/snapclient", "-h", "127.0.0.1", "-p", "\(streamPort)", "--instance", "\(instance)",
                                        "--hostID", "room\(instance)", "--player", "pulse:server=\(pulseServer)"],
                                       log: folder.appendingPathComponent("snapclient\(instance).log").path,
                                       environment: sink.map { ["PULSE_SINK": $0] } ?? [:]))
        try Self.waitUntil("snapclient \(instance)'s connection (\(log))") { connections() > before }
    }

    /// Stops room `instance`'s snapclient, as when its machine goes away.
    public func removeRoom(_ instance: Int) {
        guard let client = clients.removeValue(forKey: instance), client.isRunning else { return }
        client.terminate()
        client.waitUntilExit()
    }

    /// Stops the clients, then the server.
    public func stop() {
        for instance in clients.keys.sorted(by: >) { removeRoom(instance) }
        if server.isRunning {
            server.terminate()
            server.waitUntilExit()
        }
    }

    /// One JSON-RPC request on a connection of its own: the `result` of its answer (an error
    /// answer, or none in 5 s, throws).
    public func request(_ method: String, _ parameters: [String: Any] = [:]) throws -> Any {
        let descriptor = try connectLoopback(port: controlPort)
        defer { Glibc.close(descriptor) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var message: [String: Any] = ["id": 1, "jsonrpc": "2.0", "method": method]
        if !parameters.isEmpty { message["params"] = parameters }
        let line = try JSONSerialization.data(withJSONObject: message) + Data("\r\n".utf8)
        guard line.withUnsafeBytes({ send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == line.count else {
            throw Failure(description: "\(method): the request was not sent")
        }
        // Notifications may come first: the answer is the line with the request's id.
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            while let end = received.firstIndex(of: UInt8(ascii: "\n")) {
                let answer = received[received.startIndex..<end]
                received = received[(end + 1)...]
                guard let object = try? JSONSerialization.jsonObject(with: answer) as? [String: Any], object["id"] as? Int == 1 else { continue }
                if let error = object["error"] { throw Failure(description: "\(method): \(error)") }
                return object["result"] ?? NSNull()
            }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { throw Failure(description: "\(method): no answer from snapserver (\(log))") }
            received.append(contentsOf: buffer[0..<count])
        }
    }

    private func connections() -> Int {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").components(separatedBy: "NewConnection").count - 1
    }

    private static func waitUntil(_ description: String, seconds: Double = 10, _ condition: () -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !condition() {
            guard Date() < deadline else { throw Failure(description: "timed out waiting for \(description)") }
            usleep(10_000)
        }
    }

    private static func launch(_ arguments: [String], log: String, environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }
}
