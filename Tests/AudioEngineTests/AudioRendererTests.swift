@testable import AudioEngine
import AudioTestSupport
import Foundation
import Synchronization
import XCTest

/// The audio thread's state machine on an output whose clock the test moves
/// (`ManualClockOutput`): what is heard after a start, a refill, a skip, a seek, a pause, a run
/// dry and the queue's end, frame by frame, and when each change is announced. No sound server
/// and no real time decide the outcome; the tests that judge a real server's sound are in
/// `RealTimeSinkTests` and `StartIntegrityTests`.
final class AudioRendererTests: XCTestCase {
    private var directory: URL!
    private let rate = 44_100
    /// Both kinds of output the renderer meets: one that pauses in place and discards on a
    /// running prepare (the native stream, ALSA's pulse plugin), and one that does neither
    /// (a kernel device without pause).
    private let outputKinds: [AudioOutputCapabilities] = [[.pause, .prepareDiscardsPlayback], []]

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
    }

    /// An engine on a manual-clock output, its queue of distinct sweeps, and the events it
    /// sent with how much had been heard when each arrived. The output exists once the engine
    /// opened it (`play()`/`prepare()`).
    private final class Rig: Sendable {
        let engine: AudioEngine
        let configuration: AudioEngineConfiguration
        let signals: [[Int16]]
        let opened = Mutex<ManualClockOutput?>(nil)
        let events = Mutex<[(event: AudioEngineEvent, heardFrames: Int)]>([])
        /// Broadcast after each event.
        let eventArrived = NSCondition()

        init(engine: AudioEngine, configuration: AudioEngineConfiguration, signals: [[Int16]]) {
            self.engine = engine
            self.configuration = configuration
            self.signals = signals
        }

        var output: ManualClockOutput { opened.withLock { $0! } }
        var refillFrames: Int { configuration.pcmRequest(sampleRate: 44_100).periodSizeInFrames }
        var renderPeriodFrames: Int { configuration.renderPeriodFrames(at: 44_100) }
    }

    /// A rig whose output has `capabilities`, its entries `entrySeconds` long. With `slowOpen`,
    /// opening the output signals `entered` and then waits for `gate` (a sound server slow to
    /// answer, a USB device waking up).
    private func rig(_ entrySeconds: [Double], capabilities: AudioOutputCapabilities = [.pause, .prepareDiscardsPlayback],
                     slowOpen: (entered: DispatchSemaphore, gate: DispatchSemaphore)? = nil) throws -> Rig {
        let name = "manual-clock-\(UUID().uuidString)"
        var configuration = AudioEngineConfiguration(deviceName: name)
        configuration.sampleFormats = [.int16]
        configuration.realtimePriority = nil
        // Nothing but the clock decides what is heard: a decoder late after a start waits
        // instead of being padded with silence.
        configuration.underrunBehavior = .waitForData
        var signals: [[Int16]] = []
        var paths: [String] = []
        for (index, seconds) in entrySeconds.enumerated() {
            let url = directory.appendingPathComponent("\(name)-\(index + 1).flac")
            let signal = TestSignal.sweep(frames: Int(seconds * Double(rate)), startHz: 200 + 700 * Double(index),
                                          endHz: 3_000 + 500 * Double(index), amplitude: 0.9 - 0.2 * Double(index))
            try writeAudioFile(url, signal)
            signals.append(signal.map { Int16(($0 * 32_768).rounded()) })
            paths.append(url.path)
        }
        let engine = AudioEngine(configuration: configuration)
        let rig = Rig(engine: engine, configuration: configuration, signals: signals)
        AudioOutputs.register(name) { [rig] name, request throws(AudioOutputError) in
            if let slowOpen {
                slowOpen.entered.signal()
                slowOpen.gate.wait()
            }
            let output = try ManualClockOutput(name: name, request: request, capabilities: capabilities)
            rig.opened.withLock { $0 = output }
            return output
        }
        addTeardownBlock { AudioOutputs.register(name, opener: nil) }
        engine.setQueue(AudioEntryList(paths: paths))
        engine.setEventHandler { [rig] event in
            let heard = rig.opened.withLock { $0?.snapshot.heardFrames } ?? 0
            rig.eventArrived.lock()
            rig.events.withLock { $0.append((event, heard)) }
            rig.eventArrived.broadcast()
            rig.eventArrived.unlock()
        }
        addTeardownBlock {
            engine.stop()
            engine.setEventHandler(nil)  // the handler holds the rig, which holds the engine
        }
        return rig
    }

    /// Moves the clock on by `frames`, a refill at a time, letting the renderer fill the
    /// buffer again after each.
    private func play(_ rig: Rig, frames: Int, file: StaticString = #filePath, line: UInt = #line) {
        var remaining = frames
        while remaining > 0 {
            let step = min(rig.refillFrames, remaining)
            rig.output.advance(frames: step)
            rig.output.waitUntilFull(slack: rig.renderPeriodFrames, file: file, line: line)
            remaining -= step
        }
    }

    /// Does `action` (a skip, a seek) and waits until the output runs again after it; what the
    /// renderer did to the output meanwhile.
    @discardableResult
    private func restarted(_ rig: Rig, _ description: String, file: StaticString = #filePath, line: UInt = #line,
                           by action: () -> Void) -> [ManualClockOutput.Operation] {
        let operationsBefore = rig.output.operationLog.count
        action()
        rig.output.wait("the restart after \(description)", file: file, line: line) {
            $0.operationCount > operationsBefore && $0.phase == .running
        }
        return rig.output.operationLog.dropFirst(operationsBefore).map(\.operation)
    }

    private func waitForEvent(_ rig: Rig, _ description: String, file: StaticString = #filePath, line: UInt = #line,
                              _ predicate: (AudioEngineEvent) -> Bool) -> (event: AudioEngineEvent, heardFrames: Int)? {
        let deadline = Date(timeIntervalSinceNow: 10)
        rig.eventArrived.lock()
        defer { rig.eventArrived.unlock() }
        repeat {
            if let found = rig.events.withLock({ $0.first { predicate($0.event) } }) { return found }
        } while rig.eventArrived.wait(until: deadline) || Date() < deadline
        if let found = rig.events.withLock({ $0.first { predicate($0.event) } }) { return found }
        XCTFail("no \(description) within 10 s: \(rig.events.withLock { $0.map(\.event) })", file: file, line: line)
        return nil
    }

    private func assertHeard(_ heard: [Int16], equals expected: [Int16], _ what: String,
                             file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(heard.count, expected.count, "\(what): frames heard", file: file, line: line)
        if let first = zip(heard, expected).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            XCTFail("\(what): differs at frame \(first / 2)", file: file, line: line)
        }
    }

    private func frames(_ signal: [Int16], _ range: Range<Int>) -> [Int16] { Array(signal[range.lowerBound * 2 ..< range.upperBound * 2]) }

    // MARK: - Start

    func testNothingIsWrittenBeforePlayAndTheFirstFrameHeardIsTheEntrysFirst() throws {
        let rig = try rig([2])
        try rig.engine.prepare()
        let output = rig.output
        output.advance(frames: 10_000)
        XCTAssertEqual(output.snapshot.heardFrames, 0, "nothing is heard before play()")
        XCTAssertTrue(output.operationLog.allSatisfy { if case .prepare = $0.operation { true } else { false } },
                      "prepare() only readies the output: \(output.operationLog)")
        try rig.engine.play()
        output.wait("the start") { $0.phase == .running }
        let operations = output.operationLog.map(\.operation)
        guard let start = operations.firstIndex(of: .start) else { return XCTFail("\(operations)") }
        XCTAssertEqual(operations[..<start].filter { if case .write = $0 { true } else { false } }.count, 1,
                       "what was staged goes in with one write, then the start: \(operations)")
        // At least the output's period: ALSA's pulse plugin makes it the stream's `prebuf`, so
        // less would be played only once the plugin's trigger got through the server.
        guard case .write(let staged) = operations[start - 1] else { return XCTFail("\(operations)") }
        XCTAssertGreaterThanOrEqual(staged, rig.refillFrames, "a prepared start writes the output's period at once")
        XCTAssertLessThan(staged, rig.configuration.pcmRequest(sampleRate: rate).bufferSizeInFrames,
                          "and leaves the output room")
        output.waitUntilFull(slack: rig.renderPeriodFrames)
        play(rig, frames: rate)
        assertHeard(output.heard, equals: frames(rig.signals[0], 0 ..< rate), "the first second")
    }

    // MARK: - Deep buffer

    /// The buffer is refilled a refill at a time, in one write each, and the output never runs
    /// dry: ten seconds cost about ten seconds' worth of refills, not a write per render period.
    func testTheDeepBufferIsRefilledInOneWritePerRefill() throws {
        let rig = try rig([12])
        try rig.engine.play()
        let output = rig.output
        output.waitUntilFull(slack: rig.renderPeriodFrames)
        XCTAssertGreaterThanOrEqual(rig.configuration.pcmRequest(sampleRate: rate).bufferSizeInFrames, rate / 2,
                                    "a deep buffer: at least half a second")
        let writesBefore = output.operationLog.count
        play(rig, frames: 10 * rate)
        let writes = output.operationLog.dropFirst(writesBefore).filter { if case .write = $0.operation { true } else { false } }
        let refills = (10 * rate + rig.refillFrames - 1) / rig.refillFrames
        XCTAssertLessThanOrEqual(writes.count, refills + 2, "one write per refill (\(refills) refills)")
        XCTAssertFalse(output.operationLog.contains { $0.operation == .ranDry })
        assertHeard(output.heard, equals: frames(rig.signals[0], 0 ..< 10 * rate), "ten seconds")
    }

    // MARK: - What is announced, and when

    func testAnEntryChangeIsAnnouncedWhenItIsHeardNotWhenItIsWritten() throws {
        let rig = try rig([1, 2])
        try rig.engine.play()
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
        play(rig, frames: rate - 100)  // the second entry's start is written long before this
        rig.output.advance(frames: 200)
        guard let started = waitForEvent(rig, "entryStarted(2)", { if case .entryStarted(let token, _) = $0 { token.rawValue == 2 } else { false } })
        else { return }
        XCTAssertEqual(started.event, .entryStarted(.init(rawValue: 2), streamFrame: rate), "at the boundary of the stream")
        XCTAssertGreaterThanOrEqual(started.heardFrames, rate, "announced once the boundary was heard, not before")
        let finished = rig.events.withLock { $0.first { $0.event == .entryFinished(.init(rawValue: 1)) } }
        XCTAssertNotNil(finished, "the first entry finished")
        XCTAssertGreaterThanOrEqual(finished?.heardFrames ?? 0, rate)
        play(rig, frames: rate / 2)
        assertHeard(rig.output.heard, equals: frames(rig.signals[0], 0 ..< rate) + frames(rig.signals[1], 0 ..< rate / 2 + 100),
                    "gapless across the boundary")
    }

    // MARK: - Skip, seek

    func testASkipIsHeardFromTheNextEntrysFirstFrameAndNothingOfTheOldAfterIt() throws {
        for capabilities in outputKinds {
            let rig = try rig([3, 3], capabilities: capabilities)
            try rig.engine.play()
            rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
            play(rig, frames: rate)
            let restart = restarted(rig, "the skip") { rig.engine.skipToNextEntry() }
            if capabilities.contains(.prepareDiscardsPlayback) {
                XCTAssertTrue(restart.contains { if case .prepare(let discarded) = $0 { discarded > 0 } else { false } },
                              "one prepare discards what was queued: \(restart)")
                XCTAssertFalse(restart.contains { if case .drop = $0 { true } else { false } }, "\(restart)")
            } else {
                XCTAssertTrue(restart.contains { if case .drop(let discarded) = $0 { discarded > 0 } else { false } },
                              "a drop discards what was queued: \(restart)")
            }
            rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
            play(rig, frames: rate / 2)
            assertHeard(rig.output.heard, equals: frames(rig.signals[0], 0 ..< rate) + frames(rig.signals[1], 0 ..< rate / 2),
                        "\(capabilities): the old entry up to the skip, then the new one from its first frame")
            let started = waitForEvent(rig, "entryStarted(2)") { if case .entryStarted(let token, _) = $0 { token.rawValue == 2 } else { false } }
            XCTAssertEqual(started?.event, .entryStarted(.init(rawValue: 2), streamFrame: rate))
            rig.engine.stop()
        }
    }

    func testASeekIsHeardFromTheFrameAskedFor() throws {
        let rig = try rig([4])
        try rig.engine.play()
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
        play(rig, frames: rate / 2)
        restarted(rig, "the seek") { rig.engine.seek(toFrame: 2 * rate) }
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
        play(rig, frames: rate / 2)
        assertHeard(rig.output.heard, equals: frames(rig.signals[0], 0 ..< rate / 2) + frames(rig.signals[0], 2 * rate ..< 2 * rate + rate / 2),
                    "up to the seek, then from the frame asked for")
    }

    /// A time past the entry's end — huge, or infinite — moves to its end, and the next entry
    /// is heard from its first frame; NaN is the entry's start (issue #42: these trapped).
    func testASeekPastTheEndOrToNoTimeAtAllNeverTraps() throws {
        let rig = try rig([2, 2, 2])
        try rig.engine.play()
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
        play(rig, frames: rate / 2)
        for (index, seconds) in [Double.infinity, 1e300].enumerated() {
            restarted(rig, "seeking to \(seconds)") { rig.engine.seek(toSeconds: seconds) }
            rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
            play(rig, frames: rate / 2)
            XCTAssertEqual(rig.engine.position.token?.rawValue, UInt64(index + 2), "seeking to \(seconds) ended the entry")
        }
        restarted(rig, "seeking to NaN") { rig.engine.seek(toSeconds: .nan) }
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
        play(rig, frames: rate / 4)
        let heard = rig.output.heard
        assertHeard(heard, equals: frames(rig.signals[0], 0 ..< rate / 2) + frames(rig.signals[1], 0 ..< rate / 2)
                        + frames(rig.signals[2], 0 ..< rate / 2) + frames(rig.signals[2], 0 ..< rate / 4),
                    "each entry from its first frame, then the third again from its start")
    }

    // MARK: - Pause

    /// Paused, the clock moves and nothing is heard; resumed, the entry goes on from the frame
    /// it paused at, whether the output pauses in place or is dropped and given the unheard
    /// frames again.
    func testPauseHearsNothingAndResumeLosesAndRepeatsNothing() throws {
        for capabilities in outputKinds {
            let rig = try rig([3], capabilities: capabilities)
            try rig.engine.play()
            rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
            play(rig, frames: rate / 2)
            rig.engine.pause()
            let pausesInPlace = capabilities.contains(.pause)
            rig.output.wait("the pause") { pausesInPlace ? $0.phase == .paused : $0.phase == .setUp }
            rig.output.advance(frames: rate)
            XCTAssertEqual(rig.output.snapshot.heardFrames, rate / 2, "\(capabilities): nothing heard while paused")
            // Published by the audio thread in the turn that paused, just after the output's call.
            // Exact: the manual clock is not counted on by the wall clock (the running
            // position's publication, read before the paused one and counted on by real time,
            // once showed 22,051 and 22,052 here).
            let deadline = Date(timeIntervalSinceNow: 5)
            while rig.engine.position.frame != rate / 2 && Date() < deadline { usleep(500) }
            XCTAssertEqual(rig.engine.position.frame, rate / 2, "\(capabilities): the position holds")
            rig.engine.resume()
            rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
            play(rig, frames: rate / 2)
            assertHeard(rig.output.heard, equals: frames(rig.signals[0], 0 ..< rate),
                        "\(capabilities): one continuous second across the pause")
            rig.engine.stop()
        }
    }

    // MARK: - Volume

    /// On an output without a volume of its own, the engine scales the samples (volume³, the
    /// servers' curve), and a change is heard from the very next frame: what the output held at
    /// the old level is written again at the new one, while playing and while paused. At 1 the
    /// output is the file, bit for bit.
    func testAVolumeChangeIsHeardFromTheNextFrameAndOneIsBitExact() throws {
        for capabilities in outputKinds {
            let rig = try rig([3], capabilities: capabilities)
            let half = rate / 2
            func scaled(_ range: Range<Int>, by gain: Float) -> [Int16] {
                frames(rig.signals[0], range).map { Int16((Float($0) * gain).rounded(.toNearestOrEven)) }
            }
            rig.engine.setVolume(0.5)  // 0.125 in amplitude
            XCTAssertEqual(rig.engine.volume, 0.5)
            try rig.engine.play()
            rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
            play(rig, frames: half)
            let operations = restarted(rig, "a volume change") { rig.engine.setVolume(1) }
            XCTAssertFalse(operations.isEmpty, "\(capabilities): the output's frames were replaced")
            rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
            play(rig, frames: half)
            rig.engine.pause()
            rig.output.wait("the pause") { capabilities.contains(.pause) ? $0.phase == .paused : $0.phase == .setUp }
            rig.engine.setVolume(0.5)
            rig.engine.resume()
            rig.output.wait("the resume") { $0.phase == .running }
            rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
            play(rig, frames: half)
            assertHeard(rig.output.heard,
                        equals: scaled(0 ..< half, by: 0.125) + frames(rig.signals[0], half ..< 2 * half)
                            + scaled(2 * half ..< 3 * half, by: 0.125),
                        "\(capabilities): at 0.125, then exact from the change on, then 0.125 from the change made paused")
            rig.engine.stop()
        }
    }

    // MARK: - Running dry

    /// When the output runs dry (the clock passed what it held: a stalled audio thread), the
    /// renderer recovers, counts an xrun, and plays on from the frame after the last it wrote.
    func testAnOutputThatRanDryIsRecoveredAndPlaysOnFromWhereItWas() throws {
        let rig = try rig([3])
        try rig.engine.play()
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
        play(rig, frames: rate / 2)
        let queued = rig.output.snapshot.queuedFrames
        rig.output.advance(frames: queued + 1_000)
        _ = waitForEvent(rig, "xrun") { $0 == .xrun(total: 1) }
        rig.output.wait("the restart after the xrun") { $0.phase == .running }
        XCTAssertTrue(rig.output.operationLog.contains { $0.operation == .recover })
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
        play(rig, frames: rate / 2)
        assertHeard(rig.output.heard, equals: frames(rig.signals[0], 0 ..< rate / 2 + queued + rate / 2),
                    "nothing lost or repeated across the xrun")
        XCTAssertEqual(rig.engine.statistics.xruns, 1)
    }

    // MARK: - The queue's end

    /// The last entry is heard to its last frame; the end is announced when heard, and the
    /// output is dropped only after it (100 ms later here: PipeWire counts a quantum played
    /// when its graph takes it).
    func testTheQueuesEndIsHeardWholeAndTheOutputDroppedOnlyAfterIt() throws {
        let rig = try rig([0.5])
        let end = rate / 2
        try rig.engine.play()
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)  // the entry, then silence
        rig.output.advance(frames: end - 100)
        rig.output.advance(frames: 200)
        guard let finished = waitForEvent(rig, "queueFinished", { $0 == .queueFinished }) else { return }
        XCTAssertGreaterThanOrEqual(finished.heardFrames, end, "announced once the end was heard")
        rig.output.advance(frames: rate / 10 - 1_000)  // still short of the drop
        rig.output.advance(frames: 2_000)
        rig.output.wait("the drop") { $0.phase == .setUp }
        let drop = rig.output.operationLog.last { if case .drop = $0.operation { true } else { false } }
        XCTAssertEqual(drop?.clock, end + rate / 10 + 1_100, "dropped only once 100 ms after the end were heard")
        XCTAssertEqual(Array(rig.output.heard.prefix(end * 2)), frames(rig.signals[0], 0 ..< end), "the entry whole")
        XCTAssertTrue(rig.output.heard.dropFirst(end * 2).allSatisfy { $0 == 0 }, "silence after it")
    }

    // MARK: - Repeat over nothing playable

    /// A queue that repeats (each pass new tokens, as the player's provider issues them) over
    /// files that cannot be played: `play()` says so at once, and a queue whose files went away
    /// while it played ends after them, instead of trying them round and round (issue #42: the
    /// daemon spun at 100 % under the engine's lock and answered no one).
    func testARepeatingQueueWithNothingPlayableEndsInsteadOfGoingRound() throws {
        let rig = try rig([1])
        let playable = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .first { $0.hasSuffix(".flac") }).map { directory.appendingPathComponent($0).path }
        let missing = directory.appendingPathComponent("gone.flac").path

        let nothing = RepeatingQueue(paths: [missing, "/etc/passwd"])
        rig.engine.setQueue(nothing)
        XCTAssertThrowsError(try rig.engine.play(), "nothing playable, said once") { error in
            guard case .nothingPlayable(let failures)? = error as? AudioEngineError else { return XCTFail("\(error)") }
            XCTAssertEqual(failures.count, 2, "each file once: \(failures)")
        }

        let copy = directory.appendingPathComponent("copy.flac").path
        try FileManager.default.copyItem(atPath: playable!, toPath: copy)
        rig.engine.setQueue(RepeatingQueue(paths: [copy, missing]))
        try rig.engine.play()
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
        try FileManager.default.removeItem(atPath: copy)  // the disk went away while it played
        var clock = 0
        while rig.events.withLock({ !$0.contains { $0.event == .queueFinished } }), clock < 10 * rate {
            rig.output.wait("frames to play") { $0.queuedFrames > 0 || $0.phase != .running }
            let step = min(rig.refillFrames, max(1, rig.output.snapshot.queuedFrames))
            rig.output.advance(frames: step)
            clock += step
        }
        XCTAssertTrue(rig.events.withLock { $0.contains { $0.event == .queueFinished } },
                      "the queue ended: \(rig.events.withLock { $0.map(\.event) })")
    }

    // MARK: - Control while a stream opens

    /// A `play()` on a thread of its own, blocked in a slow output's open; `finished` is
    /// signalled with its result in `result`.
    private final class SlowPlay: Sendable {
        let slowOpen = (entered: DispatchSemaphore(value: 0), gate: DispatchSemaphore(value: 0))
        let finished = DispatchSemaphore(value: 0)
        let result = Mutex<Result<Void, AudioEngineError>?>(nil)
    }

    /// A rig whose output opens slowly, and a `play()` on it waiting in that open.
    private func playWaitingForASlowOpen(file: StaticString = #filePath, line: UInt = #line) throws -> (Rig, SlowPlay) {
        let slow = SlowPlay()
        let rig = try rig([2], slowOpen: slow.slowOpen)
        Thread.detachNewThread {
            let result = Result { () throws(AudioEngineError) in try rig.engine.play() }
            slow.result.withLock { $0 = result }
            slow.finished.signal()
        }
        XCTAssertEqual(slow.slowOpen.entered.wait(timeout: .now() + 10), .success, "play() reached the output's open",
                       file: file, line: line)
        return (rig, slow)
    }

    /// Opening a stream (the device, the first file) happens outside the engine's lock: while a
    /// `play()` waits for a slow device, `pause()`, `status` and the position answer at once
    /// (issue #42: a client's pause waited for another's slow open). The pause is kept: the
    /// stream opens unstarted, nothing is heard, and `resume()` starts it from its first frame.
    func testAPauseWhileTheStreamOpensAnswersAtOnceAndKeepsItUnstarted() throws {
        let (rig, slow) = try playWaitingForASlowOpen()
        let answered = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            rig.engine.pause()
            _ = rig.engine.status
            _ = rig.engine.position
            answered.signal()
        }
        XCTAssertEqual(answered.wait(timeout: .now() + 10), .success, "pause() and status answered while the open waits")
        XCTAssertNil(slow.result.withLock { $0 }, "play() was still opening: the gate is closed")
        slow.slowOpen.gate.signal()
        XCTAssertEqual(slow.finished.wait(timeout: .now() + 10), .success)
        XCTAssertNoThrow(try slow.result.withLock { $0 }?.get())
        XCTAssertEqual(rig.engine.status, .paused, "paused before it started")
        rig.output.advance(frames: rate)
        XCTAssertEqual(rig.output.snapshot.heardFrames, 0, "nothing heard")
        XCTAssertFalse(rig.output.operationLog.contains { $0.operation == .start }, "never started: \(rig.output.operationLog)")
        rig.engine.resume()
        rig.output.wait("the start") { $0.phase == .running }
        rig.output.waitUntilFull(slack: rig.renderPeriodFrames)
        play(rig, frames: rate / 2)
        assertHeard(rig.output.heard, equals: frames(rig.signals[0], 0 ..< rate / 2), "from the first frame once resumed")
    }

    /// A `stop()` while a `play()` waits for a slow device returns at once; the `play()` then
    /// fails with `.stopped` and the output it opened is closed, never started.
    func testAStopWhileTheStreamOpensReturnsAtOnceAndCancelsTheStart() throws {
        let (rig, slow) = try playWaitingForASlowOpen()
        let stopped = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            rig.engine.stop()
            stopped.signal()
        }
        XCTAssertEqual(stopped.wait(timeout: .now() + 10), .success, "stop() answered while the open waits")
        slow.slowOpen.gate.signal()
        XCTAssertEqual(slow.finished.wait(timeout: .now() + 10), .success)
        let failure: AudioEngineError? = slow.result.withLock { result in
            if case .failure(let error) = result { return error }
            return nil
        }
        XCTAssertEqual(failure, .stopped, "the start was cancelled")
        XCTAssertEqual(rig.engine.status, .stopped)
        XCTAssertTrue(rig.output.wasClosed, "the output opened meanwhile was closed")
        XCTAssertFalse(rig.output.operationLog.contains { $0.operation == .start }, "never started")
    }

    /// `cancelOpening()` gives up only a start that is still opening (the system player's
    /// daemon supersedes a start stuck there with a later client's request): then the `play()`
    /// fails with `.stopped`; a stream that is open goes on playing.
    func testCancelOpeningGivesUpOnlyAStartThatIsStillOpening() throws {
        let (rig, slow) = try playWaitingForASlowOpen()
        XCTAssertTrue(rig.engine.cancelOpening(), "a start was opening")
        slow.slowOpen.gate.signal()
        XCTAssertEqual(slow.finished.wait(timeout: .now() + 10), .success)
        let failure: AudioEngineError? = slow.result.withLock { result in
            if case .failure(let error) = result { return error }
            return nil
        }
        XCTAssertEqual(failure, .stopped, "the start was given up")
        XCTAssertEqual(rig.engine.status, .stopped)

        let playing = try self.rig([1])
        try playing.engine.play()
        XCTAssertFalse(playing.engine.cancelOpening(), "nothing is opening")
        playing.output.waitUntilFull(slack: playing.renderPeriodFrames)
        play(playing, frames: rate / 4)
        XCTAssertEqual(playing.engine.status, .playing, "the open stream plays on")
        XCTAssertEqual(playing.output.snapshot.heardFrames, rate / 4)
    }

    func testStoppingTheEngineClosesTheOutput() throws {
        let rig = try rig([1])
        try rig.engine.play()
        let output = rig.output
        rig.engine.stop()
        XCTAssertTrue(output.wasClosed, "the session closes its output when it ends")
    }
}

/// A queue that starts again after its last entry, issuing new tokens on each pass, as the
/// player's queue does with repeat on.
private final class RepeatingQueue: AudioEntryProvider {
    private let paths: [String]
    private let issued = Mutex<[UInt64: Int]>([:])
    private let nextToken = Atomic<UInt64>(1)

    init(paths: [String]) { self.paths = paths }

    var entryCount: Int? { paths.count }

    private func issue(_ index: Int) -> AudioEntry {
        let token = nextToken.add(1, ordering: .relaxed).oldValue
        issued.withLock { $0[token] = index }
        return AudioEntry(token: .init(rawValue: token), path: paths[index])
    }

    func entry(after token: AudioEntry.Token?) -> AudioEntry? {
        guard let token else { return issue(0) }
        guard let index = issued.withLock({ $0[token.rawValue] }) else { return nil }
        return issue((index + 1) % paths.count)
    }

    func entry(before token: AudioEntry.Token) -> AudioEntry? {
        guard let index = issued.withLock({ $0[token.rawValue] }) else { return nil }
        return issue((index + paths.count - 1) % paths.count)
    }
}
