@testable import AudioEngine
import Foundation
import XCTest

/// An output whose clock moves only when the test says so (`advance(frames:)`), and which
/// records what it is given and what it "plays": the renderer's state machine — start, skip,
/// seek, pause, xrun, flush, deep-buffer refill — tested deterministically, with no sound
/// server and no real time in the outcome.
///
/// It behaves as a kernel ALSA PCM would: a buffer of the size asked for, a start that waits
/// for `start()`, the clock consuming queued frames only while running, and a run dry (the clock
/// passing the queued frames) is an xrun: -EPIPE until `recover`. The audio thread is woken
/// through an eventfd that is readable exactly while a refill fits (`periodSizeInFrames` of
/// room, ALSA's `avail_min`) or the output ran dry.
///
/// S16_LE only (asked for with `sampleFormats = [.int16]`): what is heard is compared exactly.
/// A lock guards its state: fine for a test output (the allocation tests use ALSA's `null`).
final class ManualClockOutput: AudioOutput, @unchecked Sendable {
    enum Phase: Equatable { case setUp, prepared, running, paused, ranDry }

    /// What the renderer did to it, in order, with the clock frame it happened at.
    enum Operation: Equatable {
        case write(frames: Int)
        case start
        case drop(discarded: Int)
        case prepare(discarded: Int)
        case pause(Bool)
        case recover
        case ranDry
    }

    let name: String
    let configuration: PCMConfiguration
    let capabilities: AudioOutputCapabilities
    let pollDescriptors: UnsafeMutablePointer<pollfd>
    let pollDescriptorCount = 1

    private let wake = WakeSignal()
    private let condition = NSCondition()
    // Under `condition`:
    /// Prepared once opened, as a configured ALSA PCM is.
    private var phase = Phase.prepared
    /// Written and not yet heard (interleaved).
    private var queued: [Int16] = []
    /// Everything heard, in order (interleaved).
    private var heardSamples: [Int16] = []
    private var clock = 0
    private var operations: [(clock: Int, operation: Operation)] = []
    private var isReadable = false
    private var isClosed = false

    init(name: String, request: PCMRequest, capabilities: AudioOutputCapabilities) throws(AudioOutputError) {
        guard request.sampleFormats.contains(.int16) else {
            throw .other(device: name, message: "S16_LE only")
        }
        self.name = name
        // Its clock moves only when a test advances it: the position is never counted on by
        // the wall clock.
        self.capabilities = capabilities.subtracting(.realTimeClock)
        configuration = PCMConfiguration(sampleRate: request.sampleRate, channelCount: request.channelCount,
                                         sampleFormat: .int16, periodSizeInFrames: request.periodSizeInFrames,
                                         bufferSizeInFrames: request.bufferSizeInFrames,
                                         canPause: capabilities.contains(.pause))
        pollDescriptors = .allocate(capacity: 2)
        pollDescriptors.initialize(repeating: pollfd(), count: 2)
        pollDescriptors[0] = pollfd(fd: wake.descriptor, events: Int16(POLLIN), revents: 0)
    }

    deinit { pollDescriptors.deallocate() }

    private var channels: Int { configuration.channelCount }
    private var queuedFrames: Int { queued.count / channels }

    /// Runs `body` under the lock, then makes the descriptor's readiness match the state and
    /// wakes whoever waits for a change.
    private func changing<T>(_ body: () -> T) -> T {
        condition.lock()
        defer {
            let readable = phase == .ranDry
                || (phase == .running && configuration.bufferSizeInFrames - queuedFrames >= configuration.periodSizeInFrames)
            if readable != isReadable {
                isReadable = readable
                if readable { wake.signal() } else { wake.drain() }
            }
            condition.broadcast()
            condition.unlock()
        }
        return body()
    }

    private func log(_ operation: Operation) { operations.append((clock, operation)) }

    // MARK: AudioOutput

    func write(_ bytes: UnsafeRawPointer, frameCount: Int) -> Int {
        changing {
            switch phase {
            case .ranDry: return -Int(EPIPE)
            case .setUp: return -Int(EBADFD)
            case .prepared, .running, .paused: break
            }
            let frames = min(frameCount, configuration.bufferSizeInFrames - queuedFrames)
            if frames == 0 { return -Int(EAGAIN) }
            queued.append(contentsOf: UnsafeBufferPointer(start: bytes.assumingMemoryBound(to: Int16.self), count: frames * channels))
            log(.write(frames: frames))
            return frames
        }
    }

    func availableFrames() -> Int {
        changing { phase == .ranDry ? -Int(EPIPE) : configuration.bufferSizeInFrames - queuedFrames }
    }

    func delayFrames() -> Int {
        changing { phase == .ranDry ? -Int(EPIPE) : queuedFrames }
    }

    func start() -> Int32 {
        changing {
            guard phase == .prepared else { return -EBADFD }
            phase = .running
            log(.start)
            return 0
        }
    }

    func drop() -> Int32 {
        changing {
            log(.drop(discarded: queuedFrames))
            queued.removeAll()
            phase = .setUp
            return 0
        }
    }

    func prepare() -> Int32 {
        changing {
            if (phase == .running || phase == .paused) && !capabilities.contains(.prepareDiscardsPlayback) { return -EBUSY }
            log(.prepare(discarded: queuedFrames))
            queued.removeAll()
            phase = .prepared
            return 0
        }
    }

    func pause(_ enable: Bool) -> Int32 {
        changing {
            guard capabilities.contains(.pause) else { return -ENOSYS }
            guard phase == (enable ? .running : .paused) else { return -EBADFD }
            phase = enable ? .paused : .running
            log(.pause(enable))
            return 0
        }
    }

    func recover(from error: Int32) -> Int32 {
        changing {
            guard error == -EPIPE, phase == .ranDry else { return error }
            queued.removeAll()
            phase = .prepared
            log(.recover)
            return 0
        }
    }

    func failure(_ operation: DeviceOperation, code: Int32) -> AudioOutputError {
        .other(device: name, message: "\(operation) failed (\(code))")
    }

    func close() { changing { isClosed = true } }

    // MARK: The test's side

    /// Moves the clock on by `frames`: while running, that many queued frames are heard; when
    /// fewer were queued, the output runs dry (an xrun) after the last of them.
    func advance(frames: Int) {
        changing {
            clock += frames
            guard phase == .running else { return }
            let heard = min(frames, queuedFrames)
            heardSamples.append(contentsOf: queued.prefix(heard * channels))
            queued.removeFirst(heard * channels)
            if heard < frames {
                phase = .ranDry
                log(.ranDry)
            }
        }
    }

    /// The output's state at one moment.
    struct Snapshot {
        var phase: Phase
        /// Frames written and not yet heard.
        var queuedFrames: Int
        var roomInFrames: Int
        var heardFrames: Int
        var clock: Int
        var operationCount: Int
    }

    private var snapshotLocked: Snapshot {
        Snapshot(phase: phase, queuedFrames: queuedFrames, roomInFrames: configuration.bufferSizeInFrames - queuedFrames,
                 heardFrames: heardSamples.count / channels, clock: clock, operationCount: operations.count)
    }

    var snapshot: Snapshot { condition.lock(); defer { condition.unlock() }; return snapshotLocked }

    /// Waits until `predicate` holds for the output; false (and a test failure) after
    /// `timeout` seconds, which only a broken renderer reaches.
    @discardableResult
    func wait(_ description: String, timeout: TimeInterval = 10, file: StaticString = #filePath, line: UInt = #line,
              until predicate: (Snapshot) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(snapshotLocked) {
            if !condition.wait(until: deadline) && !predicate(snapshotLocked) {
                XCTFail("no \(description) within \(timeout) s: \(snapshotLocked)", file: file, line: line)
                return false
            }
        }
        return true
    }

    /// Waits until the renderer has filled the buffer while it runs: less than `slack` frames
    /// of room (the render period: it writes whole periods).
    func waitUntilFull(slack: Int, file: StaticString = #filePath, line: UInt = #line) {
        wait("a full buffer", file: file, line: line) { $0.phase == .running && $0.roomInFrames < slack }
    }

    /// Everything heard so far, interleaved.
    var heard: [Int16] { condition.lock(); defer { condition.unlock() }; return heardSamples }
    /// What the renderer did, in order.
    var operationLog: [(clock: Int, operation: Operation)] { condition.lock(); defer { condition.unlock() }; return operations }
    var wasClosed: Bool { condition.lock(); defer { condition.unlock() }; return isClosed }
}
