@testable import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import Glibc
import Synchronization
import XCTest

/// The engine playing to Snapcast's pipe source (issue #46): a private snapserver and a
/// snapclient on loopback, the client playing into the test sink, heard at its monitor.
final class SnapcastOutputTests: XCTestCase {
    private var directory: URL!
    private var processes: [Process] = []

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/snapserver"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/snapclient") else {
            throw XCTSkip("snapserver and snapclient are not installed (scripts/setup-system installs them)")
        }
    }

    override func tearDown() {
        // Stopped by their own PIDs, the client first.
        for process in processes.reversed() where process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        processes = []
    }

    /// A TCP port nothing listens on now (the kernel's pick for port 0).
    private func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw XCTSkip("no free port: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private func launch(_ arguments: [String], log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        processes.append(process)
        return process
    }

    /// Waits until `condition` holds, at most `seconds`.
    private func waitUntil(_ description: String, seconds: Double = 10, _ condition: () -> Bool) throws {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while !condition() {
            guard Date() < deadline else { throw XCTSkip("timed out waiting for \(description)") }
            usleep(10_000)
        }
    }

    /// snapserver with a pipe source at 44.1 kHz (PCM to its clients, `bufferMilliseconds` of
    /// buffer) and one snapclient connected to it, playing into the test server's only sink.
    /// Returns the FIFO's path.
    private func startSnapcast(bufferMilliseconds: Int) throws -> String {
        _ = try AudioTestEnvironment.requirePulse()
        let pulseServer = try XCTUnwrap(ProcessInfo.processInfo.environment["PULSE_SERVER"], "scripts/with-test-sink sets it")
        let fifo = directory.appendingPathComponent("snapfifo").path
        let streamPort = try freePort(), controlPort = try freePort()
        let serverLog = directory.appendingPathComponent("snapserver.log").path
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("snapserver"), withIntermediateDirectories: true)
        _ = try launch(["/usr/bin/snapserver", "-c", "/dev/null", "--server.datadir=\(directory.appendingPathComponent("snapserver").path)",
                        "--http.enabled=0", "--tcp.port=\(controlPort)", "--tcp.bind_to_address=127.0.0.1",
                        "--stream.port=\(streamPort)", "--stream.bind_to_address=127.0.0.1",
                        "--stream.source=pipe://\(fifo)?name=default&sampleformat=44100:16:2&mode=create",
                        "--stream.codec=pcm", "--stream.buffer=\(bufferMilliseconds)", "--logging.filter=*:notice"], log: serverLog)
        try waitUntil("snapserver's FIFO") { FileManager.default.fileExists(atPath: fifo) }
        _ = try launch(["/usr/bin/snapclient", "-h", "127.0.0.1", "-p", "\(streamPort)", "--hostID", "room1",
                        "--player", "pulse:server=\(pulseServer)"], log: directory.appendingPathComponent("snapclient.log").path)
        try waitUntil("snapclient's connection") {
            ((try? String(contentsOfFile: serverLog, encoding: .utf8)) ?? "").contains("NewConnection")
        }
        return fifo
    }

    /// An album of two songs cut at an odd frame, played through Snapcast: heard whole, from the
    /// first song's start to the second's end without a gap, about Snapcast's buffer after
    /// `play()`, and the second song announced when the room plays it. (Not bit for bit: a
    /// snapclient inserts or drops a sample now and then to stay in sync with the server.)
    func testAnAlbumIsHeardWholeAndGaplessInTheRoom() throws {
        let fifo = try startSnapcast(bufferMilliseconds: 300)
        let recorder = try SharedMonitor.recorder()
        let signal = TestSignal.sweep(frames: 88_200, startHz: 300, endHz: 3_000)
        let cut = 37_777
        let first = directory.appendingPathComponent("1.flac"), second = directory.appendingPathComponent("2.flac")
        try writeAudioFile(first, Array(signal[..<(cut * 2)]))
        try writeAudioFile(second, Array(signal[(cut * 2)...]))

        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: "snapcast:\(fifo)?rate=44100&buffer=300"))
        let seen = Mutex<(secondAnnounced: UInt64?, finished: Bool)>((nil, false))
        engine.setEventHandler { event in
            let now = monotonicNanoseconds()
            seen.withLock { seen in
                if case .entryStarted(let token, _) = event, token.rawValue == 2 { seen.secondAnnounced = now }
                if event == .queueFinished { seen.finished = true }
            }
        }
        engine.setQueue(AudioEntryList(paths: [first.path, second.path]))
        let call = monotonicNanoseconds()
        try engine.play()
        try waitUntil("the end of the album", seconds: 15) { seen.withLock(\.finished) }
        let secondAnnounced = seen.withLock(\.secondAnnounced)
        let statistics = engine.statistics
        engine.stop()
        usleep(300_000)

        let chunks = recorder.chunks(arrivedAfter: call)
        let samples = chunks.flatMap(\.samples)
        let frames = samples.count / 2
        let loud = { (frame: Int) in abs(Int(samples[frame * 2])) > 200 || abs(Int(samples[frame * 2 + 1])) > 200 }
        let heardFirst = try XCTUnwrap((0..<frames).first(where: loud), "the album was heard")
        let heardLast = try XCTUnwrap((0..<frames).last(where: loud))
        XCTAssertEqual(Double(heardLast - heardFirst + 1), 88_200, accuracy: 441, "the whole album, within 10 ms")
        XCTAssertLessThanOrEqual(SignalAnalysis.longestQuietRun(samples, threshold: 200), 8, "no gap, at the songs' boundary or anywhere")
        XCTAssertEqual(statistics.underruns, 0)
        XCTAssertEqual(statistics.xruns, 0)

        // When: the recording's first chunk arrived after the call; frames count on from it.
        let chunkStart = try XCTUnwrap(chunks.first).arrivalNanoseconds - UInt64(try XCTUnwrap(chunks.first).samples.count / 2) * 1_000_000_000 / 44_100
        let heardMilliseconds = (Double(chunkStart) + Double(heardFirst) * 1e9 / 44_100 - Double(call)) / 1e6
        XCTAssertGreaterThan(heardMilliseconds, 250, "not before Snapcast's 300 ms buffer")
        XCTAssertLessThan(heardMilliseconds, 800, "within Snapcast's buffer and the client's own")
        let boundaryHeard = heardMilliseconds + Double(cut) * 1_000 / 44_100
        let announced = Double(try XCTUnwrap(secondAnnounced, "the second song was announced") - call) / 1e6
        XCTAssertEqual(announced, boundaryHeard, accuracy: 30, "announced at \(announced) ms, heard at \(boundaryHeard) ms")
        print("snapcast: first sound \(String(format: "%.1f", heardMilliseconds)) ms after play(); second song announced "
              + "\(String(format: "%.1f", announced - boundaryHeard)) ms from when it was heard")
    }

    /// Names that are not a pipe source, and a FIFO no server reads, are reported as a failed
    /// output saying what is wrong, never as silence that plays on.
    func testAMissingOrSilentServerIsAFailedOutputThatSaysWhy() throws {
        let signal = TestSignal.tone(hz: 440, frames: 44_100 * 8, sampleRate: 44_100, channels: 2)
        let song = directory.appendingPathComponent("song.flac")
        try writeAudioFile(song, signal)
        func opening(_ name: String) -> String {
            let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: name))
            engine.setQueue(AudioEntryList(paths: [song.path]))
            defer { engine.stop() }
            do {
                try engine.play()
                return "played"
            } catch {
                return "\(error)"
            }
        }
        XCTAssertTrue(opening("snapcast:relative/fifo").contains("give the path of snapserver's pipe source"))
        XCTAssertTrue(opening("snapcast:\(directory.path)/none").contains("is snapserver's pipe source there?"))
        XCTAssertTrue(opening("snapcast:\(song.path)").contains("is not a FIFO"))
        XCTAssertTrue(opening("snapcast:/tmp/x?speed=2").contains("unknown option 'speed=2'"))

        // A FIFO nobody reads: it fills, and after 3 s of no reading the output fails.
        let fifo = directory.appendingPathComponent("unread").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: "snapcast:\(fifo)?rate=44100&buffer=300"))
        let events = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: [song.path]))
        try engine.play()
        defer { engine.stop() }
        events.wait(for: "the output failed", timeout: 10) { event in
            if case .deviceFailed(let error) = event { "\(error)".contains("stopped reading") } else { false }
        }
    }
}
