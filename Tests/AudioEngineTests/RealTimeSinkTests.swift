@testable import AudioEngine
import AudioTestSupport
import AudioMeasurement
import Foundation
import Synchronization
import XCTest

/// The engine against a sound server that consumes audio in real time (a PulseAudio null
/// sink started by scripts/with-test-sink), observed at the sink's monitor.
final class RealTimeSinkTests: XCTestCase {
    private var directory: URL!


    private func recorder() throws -> MonitorRecorder { try SharedMonitor.recorder() }

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
    }

    /// An engine on `device` already playing a 440 Hz tone of `seconds`.
    private func playingTone(seconds: Int, on device: String) throws -> AudioEngine {
        let url = directory.appendingPathComponent("tone.flac")
        try writeAudioFile(url, TestSignal.tone(hz: 440, frames: 44_100 * seconds, sampleRate: 44_100, channels: 2))
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: device))
        engine.setQueue(AudioEntryList(paths: [url.path]))
        try engine.play()
        return engine
    }


    func testAlbumPlaysBitExactAndWithoutSilenceAtTheBoundariesInRealTime() throws {
        _ = try AudioEnginePulseRequirement.device()
        guard let tee = AudioTestEnvironment.teeDevicePrefix else {
            return XCTFail("scripts/with-test-sink sets MUSICKIT_TEST_TEE_DEVICE")
        }
        let recorder = try recorder()

        let signal = TestSignal.sweep(frames: 66_150, startHz: 300, endHz: 3_000)  // 1.5 s
        let cuts = [21_001, 43_657]
        let bounds = [0] + cuts + [66_150]
        let paths = try zip(bounds, bounds.dropFirst()).enumerated().map { index, range -> String in
            let url = directory.appendingPathComponent("\(index).flac")
            try writeAudioFile(url, Array(signal[range.0 * 2 ..< range.1 * 2]))
            return url.path
        }
        let capture = directory.appendingPathComponent("tee.raw")
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: "\(tee):FILE=\(capture.path)"))
        let events = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.prepare()
        let started = monotonicNanoseconds()
        try engine.play()
        events.waitForQueueFinished(timeout: 10)
        let elapsed = Double(monotonicNanoseconds() - started) / 1e9
        let statistics = engine.statistics
        engine.stop()
        usleep(100_000)

        XCTAssertGreaterThan(elapsed, 1.4, "a real-time sink takes the album's duration")
        XCTAssertEqual(statistics.underruns, 0)
        XCTAssertEqual(statistics.xruns, 0)
        let written = try readCapture(capture)
        let expected = pcm16(signal)
        XCTAssertEqual(Array(written.prefix(expected.count)), expected, "every frame written, in order, none inserted")
        let heard = recorder.samples(after: started)
        XCTAssertGreaterThan(heard.count / 2, 60_000, "the monitor heard the album")
        XCTAssertLessThan(SignalAnalysis.longestQuietRun(heard), 8, "no silence between the tracks at the sink")
    }

    /// The same album through the native PulseAudio output, checked at the monitor alone: from
    /// its first frame to its last, bit for bit (a gap at a boundary, or an end cut short by a
    /// stream stopped before the server played it out, would differ), no underrun or xrun.
    func testNativePulseAudioPlaysTheAlbumWholeAndBitExact() throws {
        let device = try AudioTestEnvironment.requireNativePulse()
        let recorder = try recorder()
        let signal = TestSignal.sweep(frames: 66_150, startHz: 300, endHz: 3_000).enumerated().map { index, value in
            index < 2 ? Float(29_490) / 32_768 : value  // full scale at frame 0: the landing is exact
        }
        let bounds = [0, 21_001, 43_657, 66_150]
        let paths = try zip(bounds, bounds.dropFirst()).enumerated().map { index, range -> String in
            let url = directory.appendingPathComponent("\(index).flac")
            try writeAudioFile(url, Array(signal[range.0 * 2 ..< range.1 * 2]))
            return url.path
        }
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: device))
        let events = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.prepare()
        usleep(150_000)
        let call = monotonicNanoseconds()
        try engine.play()
        let check = recorder.checkStart(since: call - 100_000_000, call: call, track: pcm16(signal), compareFrames: 66_150)
        events.waitForQueueFinished(timeout: 5)
        let statistics = engine.statistics
        engine.stop()
        XCTAssertEqual(check.framesHeardBeforeCall, 0, "nothing before play() (\(check))")
        XCTAssertLessThanOrEqual(check.landingFrame ?? .max, StartIntegrityTests.monitorLandingFloor, "from the first frame (\(check))")
        XCTAssertEqual(check.comparedFrames + (check.landingFrame ?? 0), 66_150, "compared to the last frame (\(check))")
        XCTAssertEqual(check.mismatchedFrames, 0, "the whole album, bit-exact (\(check))")
        XCTAssertEqual(statistics.underruns, 0)
        XCTAssertEqual(statistics.xruns, 0)
    }

    /// With a deep buffer the next entry is written up to half a second before it is heard; its
    /// start is still announced, and the position turns to it, when it is heard: within 10 ms of
    /// its first sound at the monitor. A second of digital silence, then a sweep, played on.
    func testANaturalEntryChangeIsAnnouncedWhenItIsHeard() throws {
        try naturalEntryChangeIsAnnouncedWhenItIsHeard(on: try AudioEnginePulseRequirement.device())
    }

    func testNativeNaturalEntryChangeIsAnnouncedWhenItIsHeard() throws {
        try naturalEntryChangeIsAnnouncedWhenItIsHeard(on: try AudioTestEnvironment.requireNativePulse())
    }

    private func naturalEntryChangeIsAnnouncedWhenItIsHeard(on device: String) throws {
        let recorder = try recorder()
        let silence = directory.appendingPathComponent("silence.flac")
        let sweep = directory.appendingPathComponent("sweep.flac")
        try writeAudioFile(silence, [Float](repeating: 0, count: 44_100 * 2))
        let signal = TestSignal.sweep(frames: 88_200, startHz: 300, endHz: 3_000).enumerated().map { index, value in
            index < 2 ? Float(29_490) / 32_768 : value  // full scale at frame 0: its first sound is its start
        }
        try writeAudioFile(sweep, signal)
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: device))
        let announced = NSCondition()
        nonisolated(unsafe) var announcedAt: UInt64?
        nonisolated(unsafe) var positionThen: AudioEnginePosition?
        engine.setEventHandler { event in
            guard case .entryStarted(let token, _) = event, token.rawValue == 2 else { return }
            let now = monotonicNanoseconds()
            let position = engine.position
            announced.lock()
            announcedAt = now
            positionThen = position
            announced.broadcast()
            announced.unlock()
        }
        engine.setQueue(AudioEntryList(paths: [silence.path, sweep.path]))
        let call = monotonicNanoseconds()
        try engine.play()
        let check = recorder.checkStart(since: call - 100_000_000, call: call, track: pcm16(signal), timeout: 4)
        announced.lock()
        while announcedAt == nil { if !announced.wait(until: Date(timeIntervalSinceNow: 3)) { break } }
        let eventAt = announcedAt
        let position = positionThen
        announced.unlock()
        let statistics = engine.statistics
        engine.stop()
        let heardMilliseconds = try XCTUnwrap(check.milliseconds, "the sweep was heard (\(check))")
        XCTAssertLessThanOrEqual(check.landingFrame ?? .max, StartIntegrityTests.monitorLandingFloor, "from its first frame (\(check))")
        XCTAssertEqual(check.mismatchedFrames, 0, "bit-exact (\(check))")
        let eventMilliseconds = Double(try XCTUnwrap(eventAt, "entryStarted(2) came") - call) / 1e6
        XCTAssertEqual(eventMilliseconds, heardMilliseconds, accuracy: 10,
                       "announced at \(eventMilliseconds) ms, heard at \(heardMilliseconds) ms after play()")
        XCTAssertEqual(position?.token?.rawValue, 2, "the position is the new entry's when it is announced")
        XCTAssertLessThan(position?.seconds ?? .infinity, 0.01, "from its start")
        XCTAssertEqual(statistics.underruns, 0)
        XCTAssertEqual(statistics.xruns, 0)
    }

    /// A sink the server does not have, and a server that does not answer, are device errors
    /// that say what to check, and nothing is played.
    func testNativePulseAudioNamesAMissingSinkAndAnUnreachableServer() throws {
        _ = try AudioTestEnvironment.requireNativePulse()
        let url = directory.appendingPathComponent("tone.flac")
        try writeAudioFile(url, TestSignal.tone(hz: 440, frames: 4_410, sampleRate: 44_100, channels: 2))
        func openingError(_ device: String) -> String? {
            let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: device))
            engine.setQueue(AudioEntryList(paths: [url.path]))
            defer { engine.stop() }
            do {
                try engine.prepare()
                return nil
            } catch .device(let error) {
                return error.description
            } catch {
                return "not a device error: \(error)"
            }
        }
        let missing = try XCTUnwrap(openingError("pulseaudio:no_such_sink"), "a missing sink fails")
        XCTAssertTrue(missing.hasPrefix("PulseAudio pa_stream_connect_playback on device 'pulseaudio:no_such_sink' failed"), missing)
        XCTAssertTrue(missing.contains("pactl list short sinks"), missing)

        let server = ProcessInfo.processInfo.environment["PULSE_SERVER"]
        setenv("PULSE_SERVER", "unix:\(directory.appendingPathComponent("no-server").path)", 1)
        defer { if let server { setenv("PULSE_SERVER", server, 1) } else { unsetenv("PULSE_SERVER") } }
        let unreachable = try XCTUnwrap(openingError("pulseaudio"), "no server fails")
        XCTAssertTrue(unreachable.hasPrefix("PulseAudio pa_context_connect on device 'pulseaudio' failed"), unreachable)
        XCTAssertTrue(unreachable.contains("pactl info") && unreachable.contains("PULSE_SERVER is unix:"), unreachable)
    }

    /// A drop (a skip or a seek while the server's buffer is full) leaves the whole buffer as
    /// room at once: libpulse hears of that room only from the server's next request, a round
    /// trip later, and a start that waited for it would write nothing, so that the server,
    /// triggered empty, waited for its start threshold (heard 35-65 ms late instead of ~1 ms).
    func testNativePulseAudioTakesAWholeBufferRightAfterADrop() throws {
        let device = try AudioTestEnvironment.requireNativePulse()
        let stream = try PulseStream(name: device, request: AudioTestEnvironment.sinkConfiguration(deviceName: device)
            .pcmRequest(sampleRate: 44_100))
        let buffer = stream.configuration.bufferSizeInFrames
        let silence = [UInt8](repeating: 0, count: buffer * stream.configuration.bytesPerFrame)
        func write(_ frames: Int) -> Int { silence.withUnsafeBytes { stream.write($0.baseAddress!, frameCount: frames) } }
        XCTAssertEqual(write(buffer), buffer, "an empty stream takes a buffer")
        XCTAssertEqual(stream.start(), 0)
        let end = monotonicNanoseconds() + 150_000_000
        while monotonicNanoseconds() < end {  // kept full, as playback keeps it
            let room = stream.availableFrames()
            XCTAssertGreaterThanOrEqual(room, 0, "no underrun while it is kept full")
            if room > 0 { _ = write(room) }
            usleep(1_000)
        }
        XCTAssertLessThan(stream.availableFrames(), buffer / 2, "the server's buffer is full while it plays")
        XCTAssertEqual(stream.drop(), 0)
        XCTAssertGreaterThanOrEqual(stream.availableFrames(), buffer, "room for a buffer right after the drop")
        let prefill = buffer - 2 * stream.configuration.periodSizeInFrames
        XCTAssertEqual(write(prefill), prefill, "the staged frames go in at once")
    }

    /// An underrun at the server (simulated: the audio thread sees -EPIPE) is counted as an xrun
    /// and the native stream plays on from where it was, without a second one.
    func testNativePulseAudioPlaysOnAfterAnXrun() throws {
        let device = try AudioTestEnvironment.requireNativePulse()
        let recorder = try recorder()
        let engine = try playingTone(seconds: 3, on: device)
        usleep(500_000)
        engine.simulateDeviceError(-EPIPE)
        usleep(600_000)
        let statistics = engine.statistics
        XCTAssertEqual(statistics.xruns, 1, "the underrun was counted once")
        XCTAssertEqual(engine.position.seconds, 1.1, accuracy: 0.2, "the position went on")
        let heard = recorder.samples(after: monotonicNanoseconds() - 300_000_000)
        XCTAssertGreaterThan(heard.count / 2, 8_000, "the monitor heard the last 0.3 s")
        XCTAssertEqual(SignalAnalysis.frequency(heard, sampleRate: 44_100), 440, accuracy: 30, "the tone plays on")
        engine.stop()
    }

    func testSkipSwitchesWhatTheSinkPlaysAndReportsTheNewEntry() throws {
        let device = try AudioEnginePulseRequirement.device()
        let recorder = try recorder()

        let low = directory.appendingPathComponent("low.flac")
        let high = directory.appendingPathComponent("high.flac")
        try writeAudioFile(low, TestSignal.tone(hz: 300, frames: 44_100 * 5, sampleRate: 44_100, channels: 2))
        try writeAudioFile(high, TestSignal.tone(hz: 1_500, frames: 44_100 * 5, sampleRate: 44_100, channels: 2))
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: device))
        let events = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: [low.path, high.path]))
        try engine.play()
        usleep(500_000)
        XCTAssertEqual(engine.position.token?.rawValue, 1)
        XCTAssertEqual(engine.position.seconds, 0.5, accuracy: 0.15, "position follows the clock")
        let beforeSkip = recorder.samples(after: monotonicNanoseconds() - 200_000_000)
        XCTAssertEqual(SignalAnalysis.frequency(beforeSkip, sampleRate: 44_100), 300, accuracy: 30)

        let skipped = monotonicNanoseconds()
        engine.skipToNextEntry()
        events.wait(for: "entryStarted(2)", timeout: 2) { $0 == .entryStarted(.init(rawValue: 2), streamFrame: $0.streamFrame) }
        usleep(300_000)
        let afterSkip = recorder.samples(after: skipped + 100_000_000)
        XCTAssertEqual(SignalAnalysis.frequency(afterSkip, sampleRate: 44_100), 1_500, accuracy: 50)
        XCTAssertEqual(engine.position.token?.rawValue, 2)
        XCTAssertEqual(engine.statistics.underruns, 0)
        engine.stop()
    }

    /// The native output asks the server for its timing itself, after each start (no automatic
    /// updates: they slowed every switch): after each of two skips while playing, one into
    /// the spare stream and one back into the first, the position is the new entry's and
    /// follows the clock from the skip on.
    func testNativeSkipsWhilePlayingReportThePositionAsItIsHeard() throws {
        let device = try AudioTestEnvironment.requireNativePulse()
        _ = try recorder()
        let paths = try (0..<3).map { index in
            let url = directory.appendingPathComponent("tone\(index).flac")
            try writeAudioFile(url, TestSignal.tone(hz: 300 + 400 * Double(index), frames: 44_100 * 4, sampleRate: 44_100, channels: 2))
            return url.path
        }
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: device))
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.play()
        usleep(600_000)  // the spare is made after the first start
        for token in [2, 3] as [UInt64] {
            let skipped = monotonicNanoseconds()
            engine.skipToNextEntry()
            for pause in [150_000, 300_000, 600_000] as [useconds_t] {
                usleep(pause)
                let position = engine.position
                let elapsed = Double(monotonicNanoseconds() - skipped) / 1e9
                XCTAssertEqual(position.token?.rawValue, token)
                XCTAssertEqual(position.seconds, elapsed, accuracy: 0.04, "entry \(token), \(elapsed) s after the skip")
            }
        }
        XCTAssertEqual(engine.statistics.underruns, 0)
        XCTAssertEqual(engine.statistics.xruns, 0)
        engine.stop()
    }
}

private extension AudioEngineEvent {
    var streamFrame: Int {
        if case .entryStarted(_, let frame) = self { return frame }
        return -1
    }
}

enum AudioEnginePulseRequirement {
    static func device() throws -> String { try AudioTestEnvironment.requirePulse() }
}
