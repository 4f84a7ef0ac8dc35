import Foundation
import Glibc

// Reference tools shared by the tests and the benchmarks: what a device receives from float
// samples, running a tool to its end (Debian's ffmpeg as the encoder of MP4 files; the clients
// the tests drive), and the repository's HTTP file server.

/// Samples as a 16-bit device receives them: scaled by 32,768, rounded to the nearest (ties to
/// even, as the engine and FFmpeg's converter round), clamped.
public func pcm16(_ samples: [Float]) -> [Int16] {
    samples.map { Int16(max(-32_768, min(32_767, ($0 * 32_768).rounded(.toNearestOrEven)))) }
}

/// Runs a client tool (mpc, playerctl, tmux, openssl) to its end: its exit code and output (stdout and stderr).
/// `whileRunning` runs after it started (to make the change it waits for).
@discardableResult
public func runTool(_ path: String, _ arguments: [String], environment: [String: String],
             whileRunning: (() throws -> Void)? = nil) throws -> (code: Int32, out: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = environment.merging(["PATH": "/usr/bin:/bin"]) { mine, _ in mine }
    let out = Pipe()
    process.standardOutput = out
    process.standardError = out
    // Not waitUntilExit(): it spins the calling thread's run loop, which on a task's thread
    // hung once in a loop of these tests.
    let exited = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in exited.signal() }
    try process.run()
    try whileRunning?()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    // Closed here: the Process (and with it the pipe) is not always released, and a test that
    // polls a tool kept ~130 descriptors open (the test process held ~640 by its end).
    try? out.fileHandleForReading.close()
    exited.wait()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// Encodes the audio file `source` into `destination` (an MP4 file: `.m4a`) with Debian's
/// `ffmpeg`, audio codec `codec` ("alac", "aac"); `inputs` are more inputs (`-i cover.png`),
/// `arguments` go before the output (metadata, `-use_editlist 0`, `-movflags +faststart`...).
public func encodeWithFFmpeg(_ source: URL, to destination: URL, codec: String, inputs: [String] = [],
                             arguments: [String] = []) throws {
    let result = try runTool("/usr/bin/ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-i", source.path] + inputs
                             + ["-c:a", codec] + arguments + [destination.path], environment: [:])
    guard result.code == 0 else {
        throw NSError(domain: "ffmpeg", code: Int(result.code),
                      userInfo: [NSLocalizedDescriptionKey: "ffmpeg failed on \(source.path): \(result.out)"])
    }
}

/// The integrated loudness of the audio file at `url` as FFmpeg's `ebur128` filter measures it
/// (a meter independent of the engine's libebur128 wrapper), in LUFS, with the filter's summary
/// line ("I:  -14.2 LUFS") for messages.
public func ffmpegIntegratedLoudness(_ url: URL) throws -> (lufs: Double, summary: String) {
    let result = try runTool("/usr/bin/ffmpeg", ["-nostdin", "-hide_banner", "-nostats", "-i", url.path,
                                                 "-af", "ebur128", "-f", "null", "-"], environment: [:])
    let lines = result.out.components(separatedBy: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
    guard let summary = lines.last(where: { $0.hasPrefix("I:") }),
          let lufs = Double(summary.split(separator: " ").map(String.init).dropFirst().first ?? "") else {
        throw NSError(domain: "ffmpeg", code: Int(result.code),
                      userInfo: [NSLocalizedDescriptionKey: "no integrated loudness from ffmpeg's ebur128 on \(url.path): \(result.out)"])
    }
    return (lufs, summary)
}

/// The repository's `scripts/http-file-server.py` (Python's HTTP server) on 127.0.0.1, on a
/// port of its own, serving the files under `folder` (a request's query is ignored), each answer
/// `latencyMilliseconds` late, with `headers` added, over TLS when `certificate` and `key` are
/// given. Stopped by PID with `stop()` (or when released).
public final class HTTPFileServer {
    public let port: Int
    private let process: Process

    public init(folder: URL, latencyMilliseconds: Int = 0, headers: [String: String] = [:],
                certificate: URL? = nil, key: URL? = nil) throws {
        let portFile = folder.deletingLastPathComponent().appendingPathComponent("server-\(UUID().uuidString).port")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/http-file-server.py")
        var arguments = [script.path, folder.path, portFile.path]
        if latencyMilliseconds > 0 { arguments += ["--delay-ms", String(latencyMilliseconds)] }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { arguments += ["--header", "\(name): \(value)"] }
        if let certificate, let key { arguments += ["--tls", certificate.path, key.path] }
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let log = portFile.deletingPathExtension().appendingPathExtension("log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        var written = ""
        for _ in 0..<1_000 where written.isEmpty && process.isRunning {  // it writes its port once it listens
            written = (try? String(contentsOf: portFile, encoding: .utf8)) ?? ""
            if written.isEmpty { usleep(10_000) }
        }
        guard let port = Int(written) else {
            kill(process.processIdentifier, SIGKILL)
            throw NSError(domain: "HTTPFileServer", code: 1, userInfo: [NSLocalizedDescriptionKey:
                "python3's HTTP server did not start: " + ((try? String(contentsOf: log, encoding: .utf8)) ?? "")])
        }
        self.port = port
    }

    /// Kills the server and waits (up to 5 s) until it is gone, so that nothing listens.
    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        // Not waitUntilExit(): it spins the run loop, which hangs on a task's thread.
        for _ in 0..<500 where process.isRunning { usleep(10_000) }
    }

    deinit { stop() }
}
