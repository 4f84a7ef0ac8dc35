import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import Synchronization
import XCTest

/// Every start is silent before its call and heard from the right frame: prepared and cold
/// `play()`, skips both ways, a seek while paused, a resume, a skip while paused. Checked at
/// the real-time sink's monitor (exact silence before the call; the file bit for bit from the
/// first heard frame for a second), through ALSA's pulse plugin and through the engine's native
/// PulseAudio stream (`testNative...`), and, through ALSA's `file` plugin, for every frame written.
final class StartIntegrityTests: XCTestCase {
    /// Frames at the start of new audio that a PulseAudio monitor may never show (the sink
    /// renders ahead and rewinds when a stream starts; `paplay` lands 30–80 frames in). A
    /// start that lost its first 12 ms (~530 frames) to an early plugin start fails.
    static let monitorLandingFloor = 256

    private var directory: URL!
    private var sweepURL: URL!
    private var silenceURL: URL!
    private var sweep: [Int16] = []
    /// The sweep as written to `sweepURL` (`sweep` is it in S16, as heard).
    private var sweepSignal: [Float] = []

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        // Full scale from frame 0 (a cosine), so the first non-silent frame is the first frame.
        let signal = TestSignal.sweep(frames: 3 * 44_100, startHz: 200, endHz: 3_000).enumerated().map { index, value in
            index < 2 ? Float(29_490) / 32_768 : value
        }
        sweepSignal = signal
        sweep = pcm16(signal)
        sweepURL = directory.appendingPathComponent("sweep.flac")
        silenceURL = directory.appendingPathComponent("silence.flac")
        try writeAudioFile(sweepURL, signal)
        try writeAudioFile(silenceURL, [Float](repeating: 0, count: 44_100 * 6 * 2))
    }

    private func recorder() throws -> MonitorRecorder { try SharedMonitor.recorder() }

    /// The two ways to the sink: ALSA's pulse plugin, and the engine's own libpulse stream.
    /// Both start new audio by ending a stream's underrun, so at a skip or a seek while playing
    /// the monitor may not show the first frames either way (`monitorLandingFloor`): the
    /// plugin makes a new stream, the native output switches to its spare stream. That the
    /// native switch drops nothing at the server is `PulseAudioSpareStreamTests`' check of the
    /// server's log.
    enum Output {
        case pulsePlugin, nativePulseAudio
    }

    private func engine(on output: Output) throws -> AudioEngine {
        switch output {
        case .pulsePlugin:
            return AudioEngine(configuration: try AudioTestEnvironment.sinkConfiguration())
        case .nativePulseAudio:
            return AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: try AudioTestEnvironment.requireNativePulse()))
        }
    }

    // Each start, through both outputs.
    func testPreparedPlayIsSilentUntilPlayAndHeardFromTheFirstFrame() throws { try preparedPlayIsSilentUntilPlayAndHeardFromTheFirstFrame(on: .pulsePlugin) }
    func testNativePreparedPlayIsSilentUntilPlayAndHeardFromTheFirstFrame() throws { try preparedPlayIsSilentUntilPlayAndHeardFromTheFirstFrame(on: .nativePulseAudio) }
    func testColdPlayIsHeardFromTheFirstFrame() throws { try coldPlayIsHeardFromTheFirstFrame(on: .pulsePlugin) }
    func testNativeColdPlayIsHeardFromTheFirstFrame() throws { try coldPlayIsHeardFromTheFirstFrame(on: .nativePulseAudio) }
    func testSkipsToNextAndPreviousAreHeardFromTheEntrysFirstFrame() throws { try skipsToNextAndPreviousAreHeardFromTheEntrysFirstFrame(on: .pulsePlugin) }
    func testNativeSkipsToNextAndPreviousAreHeardFromTheEntrysFirstFrame() throws { try skipsToNextAndPreviousAreHeardFromTheEntrysFirstFrame(on: .nativePulseAudio) }
    func testSkipFromSoundToSoundLeavesNothingOfTheOldEntry() throws { try skipFromSoundToSoundLeavesNothingOfTheOldEntry(on: .pulsePlugin) }
    func testNativeSkipFromSoundToSoundLeavesNothingOfTheOldEntry() throws { try skipFromSoundToSoundLeavesNothingOfTheOldEntry(on: .nativePulseAudio) }
    func testNativeSecondSkipBeforeTheSpareIsBackLeavesNothingOfTheOldEntry() throws {
        // The tone plays; the first skip switches to the spare stream (a second tone), the
        // second comes before the old stream is ready again, and goes into the playing one, over
        // what the server holds from the frame it plays next: the stream goes on, so the monitor
        // shows every frame of the new entry (+0; a switch or a new stream may land later).
        let tone = try writeTone().path
        let (recorder, engine) = try playing([tone, tone, sweepURL.path], on: .nativePulseAudio, forMicroseconds: 600_000)
        engine.skipToNextEntry()
        usleep(5_000)
        let call = monotonicNanoseconds()
        engine.skipToNextEntry()
        assertSwitchIntact(recorder.checkSwitch(call: call, track: sweep), "the skip written into the playing stream",
                           landingFloor: 0)
        engine.stop()
    }
    func testSkipToAShortLastEntryLeavesNothingOfTheOldEntryAfterIt() throws { try skipToAShortLastEntryLeavesNothingOfTheOldEntryAfterIt(on: .pulsePlugin) }
    func testNativeSkipToAShortLastEntryLeavesNothingOfTheOldEntryAfterIt() throws { try skipToAShortLastEntryLeavesNothingOfTheOldEntryAfterIt(on: .nativePulseAudio) }
    func testSeekWhilePlayingIsHeardFromTheTargetFrame() throws { try seekWhilePlayingIsHeardFromTheTargetFrame(on: .pulsePlugin) }
    func testNativeSeekWhilePlayingIsHeardFromTheTargetFrame() throws { try seekWhilePlayingIsHeardFromTheTargetFrame(on: .nativePulseAudio) }
    func testSeekWhilePausedIsSilentAndResumesAtTheTarget() throws { try seekWhilePausedIsSilentAndResumesAtTheTarget(on: .pulsePlugin) }
    func testNativeSeekWhilePausedIsSilentAndResumesAtTheTarget() throws { try seekWhilePausedIsSilentAndResumesAtTheTarget(on: .nativePulseAudio) }
    func testSkipWhilePausedIsSilentAndResumeStartsTheNextEntryFromItsFirstFrame() throws { try skipWhilePausedIsSilentAndResumeStartsTheNextEntryFromItsFirstFrame(on: .pulsePlugin) }
    func testNativeSkipWhilePausedIsSilentAndResumeStartsTheNextEntryFromItsFirstFrame() throws { try skipWhilePausedIsSilentAndResumeStartsTheNextEntryFromItsFirstFrame(on: .nativePulseAudio) }
    func testResumeAfterPauseContinuesFromTheFrameWhereItPaused() throws { try resumeAfterPauseContinuesFromTheFrameWhereItPaused(on: .pulsePlugin) }
    func testNativeResumeAfterPauseContinuesFromTheFrameWhereItPaused() throws { try resumeAfterPauseContinuesFromTheFrameWhereItPaused(on: .nativePulseAudio) }

    /// Asserts an intact start and returns the check.
    @discardableResult
    private func assertIntact(_ check: StartCheck, _ what: String, landingFloor: Int = monitorLandingFloor,
                              file: StaticString = #filePath, line: UInt = #line) -> StartCheck {
        XCTAssertNotNil(check.milliseconds, "\(what): sound came", file: file, line: line)
        XCTAssertEqual(check.framesHeardBeforeCall, 0, "\(what): nothing heard before the call (\(check))", file: file, line: line)
        XCTAssertNotNil(check.landingFrame, "\(what): the heard audio is the track (\(check))", file: file, line: line)
        XCTAssertLessThanOrEqual(check.landingFrame ?? .max, landingFloor,
                                 "\(what): heard from the expected frame (\(check))", file: file, line: line)
        XCTAssertGreaterThanOrEqual(check.comparedFrames, 44_100, "\(what): a second compared (\(check))", file: file, line: line)
        XCTAssertEqual(check.mismatchedFrames, 0, "\(what): bit-exact after the start (\(check))", file: file, line: line)
        return check
    }

    /// Asserts a switch heard cleanly (`MonitorRecorder.checkSwitch`): the new audio unmixed,
    /// from the expected frame, bit for bit for `comparedFrames`.
    private func assertSwitchIntact(_ check: StartCheck, _ what: String, comparedFrames: Int = 44_100,
                                    landingFloor: Int = monitorLandingFloor,
                                    file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNotNil(check.landingFrame, "\(what): the new audio is heard unmixed (\(check))", file: file, line: line)
        XCTAssertLessThanOrEqual(check.landingFrame ?? .max, landingFloor,
                                 "\(what): heard from the expected frame (\(check))", file: file, line: line)
        XCTAssertGreaterThanOrEqual(check.comparedFrames, comparedFrames, "\(what): \(comparedFrames) frames compared (\(check))",
                                    file: file, line: line)
        XCTAssertEqual(check.mismatchedFrames, 0, "\(what): bit-exact after it (\(check))", file: file, line: line)
    }

    /// A 4 s tone (440 Hz) in the test's folder: the entry playing before a skip.
    private func writeTone() throws -> URL {
        let url = directory.appendingPathComponent("tone.flac")
        try writeAudioFile(url, TestSignal.tone(hz: 440, frames: 44_100 * 4, sampleRate: 44_100, channels: 2))
        return url
    }

    private func settle(_ recorder: MonitorRecorder) {
        // The sink is quiet again (the previous engine stopped); a run starts from silence.
        usleep(150_000)
    }

    /// The recorder, and an engine on `output` that has played `paths` for `microseconds`
    /// (from a quiet sink): the start of each test that acts while playing.
    private func playing(_ paths: [String], on output: Output,
                         forMicroseconds microseconds: UInt32) throws -> (MonitorRecorder, AudioEngine) {
        let recorder = try recorder()
        let engine = try engine(on: output)
        settle(recorder)
        engine.setQueue(AudioEntryList(paths: paths))
        try engine.play()
        usleep(microseconds)
        return (recorder, engine)
    }

    private func preparedPlayIsSilentUntilPlayAndHeardFromTheFirstFrame(on output: Output) throws {
        let recorder = try recorder()
        let engine = try engine(on: output)
        settle(recorder)
        let since = monotonicNanoseconds()
        engine.setQueue(AudioEntryList(paths: [sweepURL.path]))
        try engine.prepare()
        usleep(1_500_000)  // a long wait after prepare: nothing may start by itself
        let call = monotonicNanoseconds()
        try engine.play()
        assertIntact(recorder.checkStart(since: since, call: call, track: sweep), "prepared play()")
        engine.stop()
    }

    private func coldPlayIsHeardFromTheFirstFrame(on output: Output) throws {
        let recorder = try recorder()
        let engine = try engine(on: output)
        settle(recorder)
        let since = monotonicNanoseconds()
        engine.setQueue(AudioEntryList(paths: [sweepURL.path]))
        let call = monotonicNanoseconds()
        try engine.play()
        assertIntact(recorder.checkStart(since: since, call: call, track: sweep), "cold play()")
        engine.stop()
    }

    private func skipsToNextAndPreviousAreHeardFromTheEntrysFirstFrame(on output: Output) throws {
        // Silence plays; the sweep is prerolled.
        let (recorder, engine) = try playing([silenceURL.path, sweepURL.path, silenceURL.path], on: output, forMicroseconds: 600_000)
        var call = monotonicNanoseconds()
        engine.skipToNextEntry()
        assertIntact(recorder.checkStart(since: call - 500_000_000, call: call, track: sweep), "skip to next")
        engine.skipToNextEntry()  // to the silence after the sweep
        usleep(400_000)
        call = monotonicNanoseconds()
        engine.skipToPreviousEntry()
        assertIntact(recorder.checkStart(since: call - 300_000_000, call: call, track: sweep), "skip to previous")
        XCTAssertEqual(engine.statistics.underruns, 0)
        engine.stop()
    }

    private func skipFromSoundToSoundLeavesNothingOfTheOldEntry(on output: Output) throws {
        // The tone is heard; the sweep is prerolled.
        let (recorder, engine) = try playing([try writeTone().path, sweepURL.path], on: output, forMicroseconds: 600_000)
        let call = monotonicNanoseconds()
        engine.skipToNextEntry()
        // From where the sweep is first heard, a second of it bit for bit: any of the tone
        // still mixed in, or a lost frame, would differ.
        assertSwitchIntact(recorder.checkSwitch(call: call, track: sweep), "the skip from the tone to the sweep")
        // A dropout in the compared second would differ too; the engine's counts say which kind.
        XCTAssertEqual(engine.statistics.underruns, 0, "underruns (the decoder late)")
        XCTAssertEqual(engine.statistics.xruns, 0, "xruns (the device ran dry, or reported so)")
        engine.stop()
    }

    /// A skip while playing to a last entry shorter than the device buffer (20 ms): what the
    /// device held of the old entry beyond the new one's frames must not play after them (the
    /// native stream, when its spare is not ready, replaces the server's buffer in place
    /// rather than flushing it).
    private func skipToAShortLastEntryLeavesNothingOfTheOldEntryAfterIt(on output: Output) throws {
        let shortFrames = 882
        let shortURL = directory.appendingPathComponent("short.flac")
        try writeAudioFile(shortURL, Array(sweepSignal.prefix(shortFrames * 2)))
        let short = Array(sweep.prefix(shortFrames * 2))
        // The tone is heard; the short entry is prerolled.
        let (recorder, engine) = try playing([try writeTone().path, shortURL.path], on: output, forMicroseconds: 600_000)
        let call = monotonicNanoseconds()
        engine.skipToNextEntry()
        usleep(500_000)  // the short entry played, and the queue ended
        let heard = recorder.samples(after: call)
        // Where the short entry's last 32 frames were heard; after them, nothing but silence.
        let tail = Array(short.suffix(64))
        let end = stride(from: 0, through: heard.count - tail.count, by: 2).first { Array(heard[$0..<($0 + tail.count)]) == tail }
        let tailStart = try XCTUnwrap(end, "the short entry was heard to its last frame")
        let after = heard[(tailStart + tail.count)...]
        let sounding = after.filter { $0 != 0 }.count / 2
        XCTAssertEqual(sounding, 0, "frames heard after the last entry's end (of \(after.count / 2))")
        XCTAssertGreaterThan(after.count / 2, 44_100 / 10, "at least 100 ms recorded after it")
        engine.stop()
    }

    private func seekWhilePlayingIsHeardFromTheTargetFrame(on output: Output) throws {
        // The sweep plays from its start.
        let (recorder, engine) = try playing([sweepURL.path], on: output, forMicroseconds: 300_000)
        let target = 2 * 44_100
        let call = monotonicNanoseconds()
        engine.seek(toFrame: target)
        // From where the target is first heard, the rest of the sweep bit for bit: any of what
        // played before still mixed in, or a lost frame, would differ.
        assertSwitchIntact(recorder.checkSwitch(call: call, track: sweep, expectedFrame: target, compareFrames: 44_100 / 2),
                           "the seek while playing", comparedFrames: 44_100 / 2)
        engine.stop()
    }

    private func seekWhilePausedIsSilentAndResumesAtTheTarget(on output: Output) throws {
        let (recorder, engine) = try playing([sweepURL.path], on: output, forMicroseconds: 300_000)
        engine.pause()
        usleep(200_000)
        let since = monotonicNanoseconds()
        engine.seek(toFrame: 44_100)
        usleep(500_000)  // a seek while paused stages the target's frames, and plays none
        let call = monotonicNanoseconds()
        engine.resume()
        assertIntact(recorder.checkStart(since: since, call: call, track: sweep, expectedFrame: 44_100),
                     "resume after a seek while paused")
        engine.stop()
    }

    private func skipWhilePausedIsSilentAndResumeStartsTheNextEntryFromItsFirstFrame(on output: Output) throws {
        let (recorder, engine) = try playing([silenceURL.path, sweepURL.path], on: output, forMicroseconds: 300_000)
        engine.pause()
        let since = monotonicNanoseconds()
        engine.skipToNextEntry()
        usleep(800_000)
        let call = monotonicNanoseconds()
        engine.resume()
        assertIntact(recorder.checkStart(since: since, call: call, track: sweep), "resume after a skip while paused")
        engine.stop()
    }

    private func resumeAfterPauseContinuesFromTheFrameWhereItPaused(on output: Output) throws {
        let (recorder, engine) = try playing([sweepURL.path], on: output, forMicroseconds: 400_000)
        engine.pause()
        usleep(300_000)
        let pausedAt = engine.position.frame
        let since = monotonicNanoseconds()
        usleep(300_000)
        let call = monotonicNanoseconds()
        engine.resume()
        // Heard again from (within the device's latency of) where the engine says it paused.
        let check = recorder.checkStart(since: since, call: call, track: sweep,
                                        expectedFrame: max(0, pausedAt - 2_048), searchFrames: 4_096,
                                        compareFrames: 22_050)
        XCTAssertEqual(check.framesHeardBeforeCall, 0, "nothing heard while paused (\(check))")
        let landing = try XCTUnwrap(check.landingFrame, "the heard audio continues the track (\(check))")
        XCTAssertEqual(Double(landing - 2_048), 0, accuracy: Double(Self.monitorLandingFloor + 1_024),
                       "resumed where it paused (\(check), engine paused at \(pausedAt))")
        XCTAssertEqual(check.mismatchedFrames, 0, "bit-exact after the resume (\(check))")
        engine.stop()
    }

    /// The same starts through ALSA's `file` plugin over `null`: nothing at all is written
    /// before `play()`, and what is written starts with the file's frame 0.
    func testNothingIsWrittenToTheDeviceBeforePlayAndTheFirstFrameWrittenIsFrameZero() throws {
        let capture = directory.appendingPathComponent("capture.raw")
        let engine = AudioEngine(configuration: captureConfiguration(capture))
        let events = EventRecorder(engine)
        engine.setQueue(AudioEntryList(paths: [sweepURL.path]))
        try engine.prepare()
        usleep(300_000)
        engine.stop()  // closing the device flushes what ALSA's file plugin holds
        let writtenBeforePlay = (try? FileManager.default.attributesOfItem(atPath: capture.path)[.size] as? Int) ?? 0
        XCTAssertEqual(writtenBeforePlay, 0, "prepare() writes nothing into the device")
        try? FileManager.default.removeItem(at: capture)
        try engine.prepare()
        try engine.play()
        events.waitForQueueFinished(timeout: 10)
        engine.stop()
        let written = try readCapture(capture)
        XCTAssertEqual(Array(written.prefix(sweep.count)), sweep, "the device received the file from frame 0, bit-exact")
    }

    /// The same through the `file` plugin in front of the real-time sink (the pulse plugin):
    /// nothing written at prepare, after a pause + skip or a seek while paused.
    func testNothingReachesThePulsePluginWhilePausedOrPrepared() throws {
        guard let tee = AudioTestEnvironment.teeDevicePrefix else { throw XCTSkip("no tee device") }
        _ = try AudioTestEnvironment.requirePulse()
        let capture = directory.appendingPathComponent("tee.raw")
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: "\(tee):FILE=\(capture.path)"))
        func size() -> Int { (try? FileManager.default.attributesOfItem(atPath: capture.path)[.size] as? Int) ?? 0 }
        engine.setQueue(AudioEntryList(paths: [sweepURL.path, sweepURL.path]))
        try engine.prepare()
        usleep(300_000)
        XCTAssertEqual(size(), 0, "prepare() writes nothing")
        try engine.play()
        usleep(300_000)
        engine.pause()
        usleep(100_000)
        engine.skipToNextEntry()
        usleep(200_000)
        engine.seek(toFrame: 22_050)
        usleep(300_000)
        engine.resume()
        usleep(300_000)
        engine.stop()
        // What was written: the first entry from frame 0 up to the pause (ALSA's file plugin
        // writes out with a delay, so sizes do not tell the moment), then the second entry
        // from the seek target, nothing in between.
        let written = try readCapture(capture)
        var prefix = 0
        while prefix < min(written.count, sweep.count) && written[prefix] == sweep[prefix] { prefix += 1 }
        prefix -= prefix % 2
        XCTAssertGreaterThan(prefix / 2, 4_410, "the first entry was written from frame 0")
        let resumed = Array(written[prefix...].prefix(8_820 * 2))
        XCTAssertEqual(resumed.count, 8_820 * 2, "0.2 s written after the resume")
        XCTAssertTrue(resumed == Array(sweep[(22_050 * 2)...].prefix(resumed.count)),
                       "after the resume, the second entry from the seek target")
    }

    /// The stream ALSA's pulse plugin makes again at a skip (its prepare replaces the stream)
    /// holds its read index until the first frames arrive (`prebuf` above 0): with 0 the server
    /// plays the new stream from the moment it is connected, and pipewire-pulse skips the first
    /// frames written by as much as its graph played before they came (a whole 1,024-frame cycle
    /// at that quantum; `ALSAPCM.configure` says why the start threshold is what sets it). Read
    /// where the server shows it: pipewire-pulse does, PulseAudio shows no stream's `prebuf`.
    func testThePulsePluginsStreamMadeAgainAtASkipWaitsForItsFirstFrames() throws {
        _ = try AudioTestEnvironment.requirePulse()
        let engine = try engine(on: .pulsePlugin)
        engine.setQueue(AudioEntryList(paths: [silenceURL.path, sweepURL.path]))
        try engine.play()
        defer { engine.stop() }
        func pluginStreams(_ streams: [PulseSinkInput]) -> [PulseSinkInput] {
            streams.filter { $0.applicationName?.hasPrefix("ALSA plug-in") == true }
        }
        let first = pluginStreams(try PulseSinkInput.waitFor("the plugin's stream") { !pluginStreams($0).isEmpty })
        guard first.allSatisfy({ $0.serial != nil && $0.prebufBytes != nil }) else {
            throw XCTSkip("the server shows no stream's serial and prebuf (PulseAudio): \(first)")
        }
        let firstSerials = Set(first.compactMap(\.serial))
        engine.skipToNextEntry()
        let made = pluginStreams(try PulseSinkInput.waitFor("the stream made at the skip") { streams in
            let plugin = pluginStreams(streams)
            // New, and made: the server lists a stream before it gives it its attributes.
            return !plugin.isEmpty && plugin.allSatisfy {
                $0.prebufBytes != nil && $0.serial.map { !firstSerials.contains($0) } ?? false
            }
        })
        XCTAssertEqual(made.count, 1, "one stream after the skip: \(made)")
        for stream in made {
            XCTAssertGreaterThan(stream.prebufBytes ?? 0, 0, "the stream made at the skip: its prebuf, bytes (\(stream))")
        }
    }
}
