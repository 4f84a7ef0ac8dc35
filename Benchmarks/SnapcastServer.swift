import Foundation
import Glibc

/// A private snapserver (Snapcast 0.26) with a pipe source at 44.1 kHz and its default codec
/// (FLAC) and buffer (1,000 ms), and one snapclient playing it into the test sink, on loopback
/// ports the kernel picked: what the cost group's Snapcast rows feed. Stopped by PID.
final class SnapcastServer {
    let fifo: String
    let pid: pid_t
    private let server: Process
    private let client: Process

    /// Nil when snapserver or snapclient is not installed, or PULSE_SERVER is not set.
    init?(directory: URL) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/snapserver"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/snapclient"),
              let pulseServer = ProcessInfo.processInfo.environment["PULSE_SERVER"] else { return nil }
        let folder = directory.appendingPathComponent("snapcast-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        fifo = folder.appendingPathComponent("fifo").path
        let streamPort = try Self.freePort(), controlPort = try Self.freePort()
        let log = folder.appendingPathComponent("snapserver.log").path
        server = try Self.launch(["/usr/bin/snapserver", "-c", "/dev/null", "--server.datadir=\(folder.path)", "--http.enabled=0",
                                  "--tcp.port=\(controlPort)", "--tcp.bind_to_address=127.0.0.1",
                                  "--stream.port=\(streamPort)", "--stream.bind_to_address=127.0.0.1",
                                  "--stream.source=pipe://\(fifo)?name=default&sampleformat=44100:16:2&mode=create",
                                  "--logging.filter=*:notice"], log: log)
        pid = server.processIdentifier
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: fifo) { usleep(10_000) }
        client = try Self.launch(["/usr/bin/snapclient", "-h", "127.0.0.1", "-p", "\(streamPort)", "--hostID", "bench-room",
                                  "--player", "pulse:server=\(pulseServer)"], log: folder.appendingPathComponent("snapclient.log").path)
        for _ in 0..<500 where !((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("NewConnection") { usleep(10_000) }
    }

    func stop() {
        for process in [client, server] where process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    private static func launch(_ arguments: [String], log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        return process
    }

    /// A TCP port nothing listens on now (the kernel's pick for port 0).
    private static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
