import AudioEngine
import AudioMeasurement
import Foundation
import MusicKitCore
import Synchronization
import XCTest

/// A fresh directory under the system's temporary directory, removed by the test's teardown.
public func makeTemporaryDirectory(_ testCase: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("musickit-tests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    testCase.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

/// Test signals whose samples are multiples of 1/32768, so a 16-bit file holds them exactly
/// and the engine's 16-bit output can be compared with them bit for bit.
public enum TestSignal {
    /// A stereo sweep at full scale (left and right at different phases), `frames` long:
    /// every frame differs from its neighbours, so a dropped or repeated frame shows.
    public static func sweep(frames: Int, sampleRate: Int = 44_100, channels: Int = 2,
                      startHz: Double = 200, endHz: Double = 4_000, amplitude: Double = 0.9) -> [Float] {
        var samples = [Float](repeating: 0, count: frames * channels)
        var phase = 0.0
        for frame in 0..<frames {
            let progress = Double(frame) / Double(max(1, frames - 1))
            let hz = startHz + (endHz - startHz) * progress
            phase += 2 * Double.pi * hz / Double(sampleRate)
            for channel in 0..<channels {
                let value = amplitude * sin(phase + Double(channel) * 0.7)
                samples[frame * channels + channel] = Float((value * 32_768).rounded()) / 32_768
            }
        }
        return samples
    }

    /// A sine tone at `hz`.
    public static func tone(hz: Double, frames: Int, sampleRate: Int, channels: Int, amplitude: Double = 0.5) -> [Float] {
        var samples = [Float](repeating: 0, count: frames * channels)
        for frame in 0..<frames {
            let value = amplitude * sin(2 * Double.pi * hz * Double(frame) / Double(sampleRate))
            for channel in 0..<channels {
                samples[frame * channels + channel] = Float((value * 32_768).rounded()) / 32_768
            }
        }
        return samples
    }
}

/// Decodes the whole file at `path`: its properties and its samples (interleaved).
public func decodeAll(_ path: String) throws -> (info: AudioFileInfo, samples: [Float]) {
    let decoder = try AudioFileDecoder(path: path)
    return (decoder.info, try decodeRest(decoder))
}

/// What `decoder` decodes from its position to the end (or `frameLimit` frames).
public func decodeRest(_ decoder: AudioFileDecoder, frameLimit: Int = .max) throws -> [Float] {
    var samples: [Float] = []
    var buffer = [Float](repeating: 0, count: 4_096 * decoder.info.channelCount)
    var remaining = frameLimit
    while remaining > 0 {
        let frames = try buffer.withUnsafeMutableBufferPointer { try decoder.read(into: $0.baseAddress!, frameCount: min(4_096, remaining)) }
        if frames == 0 { break }
        samples += buffer[0..<frames * decoder.info.channelCount]
        remaining -= frames
    }
    return samples
}

/// Writes `samples` (interleaved) to `url` in `format`.
public func writeAudioFile(_ url: URL, _ samples: [Float], sampleRate: Int = 44_100, channels: Int = 2,
                    format: AudioFileWriter.Format = .flac16, tags: AudioFileWriter.Tags = .init()) throws {
    let writer = try AudioFileWriter(path: url.path, format: format, sampleRate: sampleRate,
                                     channelCount: channels, tags: tags)
    try writer.write(samples)
    try writer.close()
}

/// Reads a raw S16_LE capture written by ALSA's `file` plugin.
public func readCapture(_ url: URL) throws -> [Int16] {
    let data = try Data(contentsOf: url)
    return data.withUnsafeBytes { raw in Array(raw.bindMemory(to: Int16.self)) }
}

/// An engine configuration that writes into a raw capture file through ALSA's `file` plugin
/// over its `null` slave: no clock, so the engine waits for the decoder instead of inserting
/// silence, and the capture holds exactly what the engine wrote.
public func captureConfiguration(_ url: URL) -> AudioEngineConfiguration {
    var configuration = AudioEngineConfiguration(deviceName: "file:FILE=\(url.path),FORMAT=raw")
    configuration.sampleFormats = [.int16]
    configuration.underrunBehavior = .waitForData
    configuration.realtimePriority = nil
    return configuration
}

/// Collects an engine's events for assertions.
public final class EventRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [AudioEngineEvent] = []

    public init(_ engine: AudioEngine) {
        engine.setEventHandler { [weak self] event in
            guard let self else { return }
            self.lock.lock()
            self.recorded.append(event)
            self.lock.unlock()
        }
    }

    public var events: [AudioEngineEvent] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    /// Waits until an event matching `predicate` was recorded; fails the test after `timeout`.
    @discardableResult
    public func wait(for description: String, timeout: TimeInterval = 10, file: StaticString = #filePath, line: UInt = #line,
              _ predicate: (AudioEngineEvent) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while Date() < deadline {
            if events.contains(where: predicate) { return true }
            usleep(2_000)
        }
        XCTFail("no \(description) within \(timeout) s; events: \(events)", file: file, line: line)
        return false
    }

    public func waitForQueueFinished(timeout: TimeInterval = 10, file: StaticString = #filePath, line: UInt = #line) {
        wait(for: "queueFinished", timeout: timeout, file: file, line: line) { $0 == .queueFinished }
    }
}

/// Removes trailing zero samples (the silence an engine writes while a device drains).
public func trimmingTrailingSilence(_ samples: [Int16]) -> [Int16] {
    var end = samples.count
    while end > 0 && samples[end - 1] == 0 { end -= 1 }
    return Array(samples[..<end])
}

/// Where the audio test environment is (set by scripts/test): the PulseAudio null sink's
/// ALSA device name, or nil when the tests run without it.
public enum AudioTestEnvironment {
    public static var pulseDevice: String? { ProcessInfo.processInfo.environment["MUSICKIT_TEST_PULSE_DEVICE"] }
    public static var pulseMonitor: String? { ProcessInfo.processInfo.environment["MUSICKIT_TEST_PULSE_MONITOR"] }
    /// ALSA device name template for a file capture over the real-time sink: append the path.
    public static var teeDevicePrefix: String? { ProcessInfo.processInfo.environment["MUSICKIT_TEST_TEE_DEVICE"] }

    /// An engine configuration for `deviceName` on the real-time sink (the sink itself, or a
    /// device in front of it such as the tee): 16-bit, as the monitor records it.
    public static func sinkConfiguration(deviceName: String) -> AudioEngineConfiguration {
        var configuration = AudioEngineConfiguration(deviceName: deviceName)
        configuration.sampleFormats = [.int16]
        return configuration
    }

    /// The real-time sink's configuration; skips the test when the sink is absent (`requirePulse`).
    public static func sinkConfiguration() throws -> AudioEngineConfiguration {
        sinkConfiguration(deviceName: try requirePulse())
    }

    /// The engine's native PulseAudio device for the same sink (`pulseaudio:SINK`); skips like `requirePulse`.
    public static func requireNativePulse() throws -> String {
        _ = try requirePulse()
        guard let device = ProcessInfo.processInfo.environment["MUSICKIT_TEST_PULSE_NATIVE_DEVICE"] else {
            throw XCTSkip("no native PulseAudio device: run the tests with scripts/test")
        }
        return device
    }

    /// Skips the test when the real-time sink is absent, unless scripts/test said it must be there.
    public static func requirePulse() throws -> String {
        if let device = pulseDevice { return device }
        if ProcessInfo.processInfo.environment["MUSICKIT_TEST_REQUIRE_AUDIO_SERVER"] == "1" {
            XCTFail("MUSICKIT_TEST_REQUIRE_AUDIO_SERVER is set but MUSICKIT_TEST_PULSE_DEVICE is not")
        }
        throw XCTSkip("no PulseAudio test sink: run the tests with scripts/test")
    }
}

/// One warmed-up recorder of the test sink's monitor, for all player tests in the process: the
/// null sink consumes in real time only while something records it.
public enum SharedMonitor {
    private static let shared = Mutex<MonitorRecorder?>(nil)

    public static func recorder() throws -> MonitorRecorder {
        guard let monitor = AudioTestEnvironment.pulseMonitor else { throw XCTSkip("no monitor source") }
        return try shared.withLock { shared in
            if let shared { return shared }
            // parec's latency, 2 ms unless MUSICKIT_TEST_MONITOR_LATENCY_MS says: on PipeWire a
            // recorder's latency also sets when pipewire-pulse sends (scripts/with-test-pipewire
            // says why it asks for 4). It changes when a chunk arrives, not which frames.
            let latency = ProcessInfo.processInfo.environment["MUSICKIT_TEST_MONITOR_LATENCY_MS"].flatMap { Int($0) } ?? 2
            let made = try MonitorRecorder(source: monitor, latencyMilliseconds: latency)
            made.warmUp()
            shared = made
            return made
        }
    }
}

/// A PulseAudio server of the test's own (private runtime folder, one null sink, a socket in
/// `folder`), for a test that must read the server's debug log, change the server, or take it
/// away under a stream; started by `start()` (again after `stop`, on the same socket) and
/// stopped by its PID.
public final class PrivatePulseServer: @unchecked Sendable {
    // @unchecked: started and stopped by one test at a time.
    public let sinkName: String
    /// The server's address for `PULSE_SERVER` (`unix:PATH`).
    public let address: String
    public let logURL: URL
    private let folder: URL
    private let socket: String
    private let debugLog: Bool
    private var processID: pid_t?

    public init(in folder: URL, sinkName: String = "private_test", debugLog: Bool = false) throws {
        self.folder = folder
        self.sinkName = sinkName
        self.debugLog = debugLog
        socket = folder.appendingPathComponent("pulse-native").path
        address = "unix:\(socket)"
        logURL = folder.appendingPathComponent("pulseaudio.log")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("pulse-runtime"), withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }

    /// Starts the server and waits (up to 10 s) until it answers.
    public func start() throws {
        unlink(socket)  // left by a killed server
        let runtime = folder.appendingPathComponent("pulse-runtime")
        // Not Foundation's `Process`: pulseaudio closes the descriptors it inherits, which
        // `Process` takes for its exit (see `spawnProcess`).
        let arguments = ["/usr/bin/pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit",
                         "--use-pid-file=no", "--disable-shm=yes", "--log-level=\(debugLog ? "debug" : "notice")",
                         "--log-target=file:\(logURL.path)",
                         "-L", "module-null-sink sink_name=\(sinkName) rate=44100 channels=2",
                         "-L", "module-native-protocol-unix auth-anonymous=1 socket=\(socket)"]
        let environment = ["HOME": folder.path, "XDG_RUNTIME_DIR": runtime.path, "PULSE_RUNTIME_PATH": runtime.path,
                           "PATH": "/usr/bin:/bin"]
        switch spawnProcess(arguments, environment: environment, outputPath: folder.appendingPathComponent("pulseaudio.out").path,
                            newSession: false) {
        case .success(let pid): processID = pid
        case .failure(let error): throw XCTSkip("pulseaudio did not start: \(error)")
        }
        let deadline = Date().addingTimeInterval(10)
        while (try? runTool("/usr/bin/pactl", ["info"], environment: ["PULSE_SERVER": address]).code) != 0 {
            guard let processID, kill(processID, 0) == 0, Date() < deadline else {
                stop()
                throw XCTSkip("pulseaudio did not start: \((try? String(contentsOf: logURL, encoding: .utf8)) ?? "no log")")
            }
            usleep(20_000)
        }
    }

    /// Stops the server by its PID with `signal` and waits for it: SIGTERM lets it finish its
    /// log; SIGKILL is a crash (and reaches a server started from a task's thread, which may not
    /// hear SIGTERM).
    public func stop(signal: Int32 = SIGTERM) {
        guard let processID else { return }
        self.processID = nil
        kill(processID, signal)
        var status: Int32 = 0
        _ = waitpid(processID, &status, 0)
    }

    deinit { stop() }
}

/// A sound server's playback streams as `pactl -f json list sink-inputs` reports them.
public struct PulseSinkInput: Equatable {
    public var index: Int
    public var sink: Int
    public var corked: Bool
    public var mute: Bool
    /// The first channel's volume (65,536 is 100%).
    public var volume: Int
    public var processID: Int?
    /// The stream's name (`media.name`), which the desktop's mixer shows.
    public var name: String?
    /// The client's name (`application.name`; ALSA's pulse plugin's is `ALSA plug-in [PROGRAM]`).
    public var applicationName: String?
    /// PipeWire's serial of the stream's node (`object.serial`): unlike the index, never used
    /// again for another stream. Nil on PulseAudio.
    public var serial: Int?
    /// The stream's `prebuf` in bytes, where the server shows it (`pulse.attr.prebuf`:
    /// pipewire-pulse does, PulseAudio does not).
    public var prebufBytes: Int?

    /// Waits until `condition` holds for this process's streams on `server` (the process's own
    /// when nil); fails the test with the streams after `timeout`. The streams last seen.
    @discardableResult
    public static func waitFor(_ description: String, server: String? = nil, timeout: TimeInterval = 5,
                               file: StaticString = #filePath, line: UInt = #line,
                               _ condition: ([PulseSinkInput]) -> Bool) throws -> [PulseSinkInput] {
        let deadline = Date().addingTimeInterval(timeout)
        var streams = try ofThisProcess(server: server)
        while !condition(streams) {
            guard Date() < deadline else {
                XCTFail("\(description); the streams: \(streams)", file: file, line: line)
                return streams
            }
            usleep(20_000)
            streams = try ofThisProcess(server: server)
        }
        return streams
    }

    /// The streams of the server at `PULSE_SERVER` (the process's own when nil) that this process plays.
    public static func ofThisProcess(server: String? = nil) throws -> [PulseSinkInput] {
        var environment: [String: String] = [:]
        environment["PULSE_SERVER"] = server ?? ProcessInfo.processInfo.environment["PULSE_SERVER"]
        let (code, out) = try runTool("/usr/bin/pactl", ["-f", "json", "list", "sink-inputs"], environment: environment)
        guard code == 0, let list = try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [[String: Any]] else {
            throw XCTSkip("pactl -f json list sink-inputs: \(out)")
        }
        return list.compactMap { input -> PulseSinkInput? in
            let properties = input["properties"] as? [String: Any]
            let volume = (input["volume"] as? [String: Any])?.values.compactMap { ($0 as? [String: Any])?["value"] as? Int }.first
            guard let index = input["index"] as? Int, let sink = input["sink"] as? Int else { return nil }
            return PulseSinkInput(index: index, sink: sink, corked: input["corked"] as? Bool ?? false,
                                  mute: input["mute"] as? Bool ?? false, volume: volume ?? 0,
                                  processID: (properties?["application.process.id"] as? String).flatMap { Int($0) },
                                  name: properties?["media.name"] as? String,
                                  applicationName: properties?["application.name"] as? String,
                                  serial: (properties?["object.serial"] as? String).flatMap { Int($0) },
                                  prebufBytes: (properties?["pulse.attr.prebuf"] as? String).flatMap { Int($0) })
        }.filter { $0.processID == Int(getpid()) }
    }
}
