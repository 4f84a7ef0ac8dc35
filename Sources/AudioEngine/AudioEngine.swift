import PlatformSupport
import Foundation
import Synchronization

/// Why the engine could not do what was asked.
public enum AudioEngineError: Error, CustomStringConvertible, Sendable, Equatable {
    /// `play()` or `prepare()` before a queue was set.
    case noQueue
    /// No entry of the queue could be opened; each failure is listed.
    case nothingPlayable([DecoderError])
    /// The output could not be opened or configured.
    case device(AudioOutputError)
    /// The stream did not fill within the time allowed.
    case timedOut(String)
    /// `stop()` came while the stream was opening, or `pause()` while its first entry waited for
    /// a download's first bytes: nothing was started.
    case stopped

    public var description: String {
        switch self {
        case .noQueue: "nothing to play: the queue is empty"
        case .nothingPlayable(let failures):
            failures.isEmpty ? "nothing to play: the queue is empty"
                : "nothing to play: " + failures.map(\.description).joined(separator: "; ")
        case .device(let error): error.description
        case .timedOut(let what): "timed out: \(what)"
        case .stopped: "stopped or paused while the first entry was opening"
        }
    }
}

/// Plays a queue of local audio files through ALSA, gaplessly.
///
/// A decoder thread reads the files (libsndfile; FFmpeg for MP4: AAC and ALAC), converts them
/// to the stream's rate and channels and writes them into a lock-free ring; a real-time audio thread moves frames
/// from the ring to the PCM device. Control calls post commands to the audio thread through
/// a lock-free queue and wake it with an eventfd.
///
/// Thread safety: every method may be called from any thread; calls are serialized.
/// Opening a stream (`play()`, `prepare()`: the first entry's file, maybe a download, and the
/// device) happens outside the engine's lock, so that `pause()`, `stop()`, `status` and the
/// position answer at once meanwhile: a pause that comes while a `play()` opens leaves the
/// stream opened but not started (paused; `resume()` starts it) — or, when its first entry is
/// waiting for a download's bytes, gives the opening up (`play()` throws `.stopped`; the next
/// `play()` opens again) — and a stop cancels the start.
/// Real-time safety: none of these methods may be called from a real-time thread (they take
/// a mutex and may block); they never block the audio thread.
public final class AudioEngine: Sendable {
    public let configuration: AudioEngineConfiguration

    private struct ControlState {
        var provider: (any AudioEntryProvider)?
        var crossfadeSeconds: Double = 0
        /// The volume set, 0...1; nil until one is set (the output's own: the server's, or 1).
        var volume: Double?
        var session: EngineSession?
        var status: AudioEngineStatus = .stopped
        /// The session's last seek: its position is reported until the audio thread has it.
        var pendingSeek: (serial: UInt64, frame: Int)?
        /// A `play()` or `prepare()` is opening a session, outside the lock.
        var isOpening = false
        /// `pause()` came while it opened: the stream is not started.
        var pausedWhileOpening = false
        /// Events the opening session sent before it was the engine's (an entry that failed
        /// while it prerolled), passed on once it is.
        var earlyEvents: [(AudioEngineEvent, EngineSession)] = []
    }
    private let control = Mutex(ControlState())
    /// Signalled when an opening ends, for a second `play()` that waits for the first's session.
    private let openingEnded = NSCondition()
    /// How many times stop() was called, and pause() while a stream opened (read without the
    /// lock; see openSessionIfNeeded).
    private let stopsRequested = Atomic<Int>(0)
    private let pausesWhileOpening = Atomic<Int>(0)

    private let listeners = EventListeners<AudioEngineEvent>()
    /// The handler `setEventHandler` set.
    private let handlerID = Mutex<EventListeners<AudioEngineEvent>.ID?>(nil)

    public init(configuration: AudioEngineConfiguration = AudioEngineConfiguration()) {
        self.configuration = configuration
    }

    /// Starts opening `configuration`'s device for a stream at `sampleRate` (the configuration's
    /// rate when it has one) on a thread of its own, so that the next engine to play on it finds
    /// it open: a command-line tool calls this first thing, and opening the device (~4 ms through
    /// a sound server) overlaps reading its arguments and its first file. Nothing is written to
    /// the device, so nothing is heard early; an engine that asks for another device or rate
    /// opens its own (and the warmed-up one is closed).
    ///
    /// `path`, the first file to play when there is one: its decoder library (libsndfile or
    /// FFmpeg) is loaded on that thread too, before the device. Opening a device is mostly the
    /// dynamic loader's work (ALSA, its plugins, a sound server's client library), and the loader
    /// takes one lock for every load and symbol lookup in the process: a caller that opened its
    /// first file meanwhile would wait for all of the device's libraries; this way it waits only
    /// for its own (libsndfile: ~0.8 ms) and gets ready beside the rest. (`musickit play` on a
    /// PulseAudio device finds libpulse loaded already, and its connection begun:
    /// Sources/CEarlyRequest/EarlyLoad.c does both on a thread of its own from process start.)
    /// No task is made here to set the concurrency runtime up early: once libpulse is loaded at
    /// process start, that setup only competes with the start for the loader's lock.
    ///
    /// `runner`: a thread the program has running already, which runs the warm-up if it takes it
    /// (returns true); otherwise the warm-up gets a thread of its own. (`musickit play` hands it
    /// to the thread that loads libpulse at process start: a thread made while a library loads
    /// waits for the loader.)
    public static func warmUpDevice(_ configuration: AudioEngineConfiguration, sampleRate: Int = 44_100,
                                    forFileAt path: String? = nil, on runner: ThreadRunner? = nil) {
        WarmDevice.begin(name: configuration.deviceName, fallback: configuration.fallbackDeviceName,
                         request: configuration.pcmRequest(sampleRate: configuration.sampleRate ?? sampleRate),
                         first: { if let path { AudioFileDecoder.loadLibrary(forFileAt: path) } }, runner: runner)
    }

    /// Runs a job on a thread that is there already; false when it does not take it.
    public typealias ThreadRunner = @Sendable (_ job: @escaping @Sendable () -> Void) -> Bool

    /// Hands the engine a connection to the PulseAudio server that the program began before
    /// the engine existed, for its first `pulseaudio[:SINK]` stream: `take` gives the main loop
    /// (`pa_threaded_mainloop *`) and the context (`pa_context *`) once — a threaded main loop,
    /// started, and a context named "OpenMusicKit" connecting to the default server, whose state
    /// callback signals the loop — or nil. The engine owns them from then on. `musickit play`
    /// begins its connection before the Swift runtime starts (Sources/CEarlyRequest/EarlyLoad.c).
    public static func adoptPulseAudioConnection(_ take: @escaping @Sendable () -> (mainloop: OpaquePointer, context: OpaquePointer)?) {
        PulseConnection.begunConnection.withLock { $0 = take }
    }

    deinit { stop() }

    // MARK: - Queue

    /// Replaces the queue. Stops what is playing; the next `prepare()`/`play()` starts at the
    /// provider's first entry.
    public func setQueue(_ provider: any AudioEntryProvider) {
        stop()
        control.withLock { $0.provider = provider }
    }

    /// Tells the engine the provider's entries after the current one changed (inserted,
    /// removed, reordered), so the decoder re-reads what comes next.
    public func queueDidChange() {
        control.withLock { $0.session?.decoderControl.noteQueueChanged() }
        control.withLock { $0.session?.decoderWake.signal() }
    }

    /// Entries that follow each other naturally overlap for `seconds`, the first fading out
    /// and the next in (equal power); 0 (the default) is a gapless cut. Skips and seeks cut.
    /// Takes effect at the next boundary the decoder has not reached yet.
    public func setCrossfade(seconds: Double) {
        control.withLock { state in
            state.crossfadeSeconds = max(0, seconds)
            state.session?.decoderControl.setCrossfade(seconds: state.crossfadeSeconds)
            state.session?.decoderWake.signal()
        }
    }

    public var crossfadeSeconds: Double { control.withLock { $0.crossfadeSeconds } }

    // MARK: - Volume

    /// Sets the volume, 0...1 (clamped) on the scale a desktop's mixer shows: on a PulseAudio or
    /// PipeWire stream (`pulseaudio[:SINK]`) it is the stream's own volume at the server (the
    /// samples stay untouched; 0.5 is −18 dB); on an ALSA device the engine scales the samples by
    /// the same curve (volume³), and writes what the device holds again at the new level, so a
    /// change is heard at once rather than a deep buffer later. Kept for every stream the engine
    /// opens from now on. 1 on ALSA is bit-exact.
    public func setVolume(_ volume: Double) {
        let clamped = Self.clampedVolume(volume)
        control.withLock { state in
            state.volume = clamped
            state.session?.setVolume(clamped)
        }
    }

    /// The volume last set, nil when none was (the output's own then).
    public var volume: Double? { control.withLock { $0.volume } }

    /// `volume` as the engine takes it: 0...1 (it never amplifies), NaN as 0.
    public static func clampedVolume(_ volume: Double) -> Double { volume.isNaN ? 0 : min(max(volume, 0), 1) }

    // MARK: - Transport

    /// Opens and configures the device, opens the first entry and decodes its first frames,
    /// in device format, into the engine's own memory, so that `play()` costs one write and a
    /// start. Nothing reaches the device before `play()`. Blocks until
    /// then (milliseconds). Does nothing when a stream is already open.
    /// `startingAtSeconds`: where in the first entry the stream starts.
    public func prepare(startingAtSeconds startSeconds: Double = 0) throws(AudioEngineError) {
        let session = try openSessionIfNeeded(startSeconds: startSeconds)
        if !session.waitUntilPrimed(timeout: 5) {
            throw .timedOut("the first frames were not decoded within 5 s")
        }
        control.withLock { state in
            if state.status == .stopped { state.status = .prepared }
        }
    }

    /// Starts playback (preparing first when needed), or resumes after `pause()`.
    /// `startingAtSeconds`: where in the first entry a new stream starts.
    public func play(startingAtSeconds startSeconds: Double = 0) throws(AudioEngineError) {
        let status = control.withLock { $0.status }
        if status == .finished { stop() }
        let session = try openSessionIfNeeded(startSeconds: startSeconds)
        let command = control.withLock { state -> AudioCommand? in
            guard state.session === session else { return nil }  // stopped just now
            if state.pausedWhileOpening {
                state.pausedWhileOpening = false
                state.status = .paused
                return nil
            }
            state.status = .playing
            return status == .paused ? .resume : .start
        }
        if let command { session.send(command) }
    }

    /// Pauses; `play()` or `resume()` continues from the same frame. While a `play()` is still
    /// opening the stream, the stream is opened but not started.
    public func pause() {
        control.withLock { state in
            guard let session = state.session else {
                if state.isOpening {
                    state.pausedWhileOpening = true
                    pausesWhileOpening.add(1, ordering: .releasing)
                }
                return
            }
            if state.status == .playing { state.status = .paused }
            session.send(.pause)
        }
    }

    /// Continues after `pause()` (and undoes a pause that came while `play()` opened).
    public func resume() {
        control.withLock { state in
            guard let session = state.session else {
                state.pausedWhileOpening = false
                return
            }
            if state.status == .paused { state.status = .playing }
            session.send(.resume)
        }
    }

    /// Stops playback and closes the device. The queue stays; `play()` starts it over.
    public func stop() {
        // First, without the lock: a play() or prepare() holding it while its first entry waits
        // for a download gives up (see openSessionIfNeeded).
        stopsRequested.add(1, ordering: .releasing)
        let session = control.withLock { state -> EngineSession? in
            defer {
                state.session = nil
                state.pendingSeek = nil
                state.status = .stopped
            }
            return state.session
        }
        session?.close()
    }

    /// Gives up a `play()` or `prepare()` still opening its stream (its first entry, the
    /// device), as `stop()` would, and only then: true when there was one to give up (it throws
    /// `.stopped`). A stream already open is left playing; the check and the cancel are one step,
    /// so an opening that ends meanwhile is not stopped by mistake (the system player's daemon:
    /// a later client's request supersedes a start that is still opening).
    package func cancelOpening() -> Bool {
        control.withLock { state in
            guard state.isOpening, state.session == nil else { return false }
            stopsRequested.add(1, ordering: .releasing)
            return true
        }
    }

    /// Skips to the entry after the one being heard. When its first frames are already
    /// decoded (ring or preroll) the audio thread switches at once, without the decoder.
    public func skipToNextEntry() {
        sendIfOpen(.skipToNext(askProvider: false)) { $0 == .finished ? .playing : $0 }
    }

    /// Skips to the entry the provider names now as the one after the entry being heard,
    /// dropping next-entry frames already decoded (for a queue that changed just before:
    /// a jump to another entry, a skip out of a repeated entry). Slower than
    /// `skipToNextEntry()` by one decode of the entry's first chunk.
    public func skipToNextEntryAskingProvider() {
        sendIfOpen(.skipToNext(askProvider: true)) { $0 == .finished ? .playing : $0 }
    }

    /// Skips to the entry before the one being heard (from its start).
    public func skipToPreviousEntry() {
        sendIfOpen(.skipToPrevious) { $0 == .finished ? .playing : $0 }
    }

    /// Plays the heard entry from its start.
    public func restartCurrentEntry() { seek(toFrame: 0) }

    /// Moves within the entry being heard to `frame` (stream rate).
    public func seek(toFrame frame: Int) {
        control.withLock { state in
            guard let session = state.session else { return }
            let serial = (state.pendingSeek?.serial ?? 0) + 1
            let frame = min(max(0, frame), Double.largestClampedInt)
            state.pendingSeek = (serial, frame)
            session.send(.seek(frame: frame, serial: serial))
        }
    }

    /// Moves within the entry being heard to `seconds`.
    public func seek(toSeconds seconds: Double) {
        let rate = control.withLock { $0.session?.device.configuration.sampleRate } ?? 0
        seek(toFrame: seconds.frames(at: rate))
    }

    private func sendIfOpen(_ command: AudioCommand, status next: (AudioEngineStatus) -> AudioEngineStatus) {
        control.withLock { state in
            guard let session = state.session else { return }
            state.status = next(state.status)
            session.send(command)
        }
    }

    // MARK: - State

    public var status: AudioEngineStatus { control.withLock { $0.status } }

    /// What is heard now: the entry and the frame within it.
    public var position: AudioEnginePosition {
        let (session, pendingSeek) = control.withLock { ($0.session, $0.pendingSeek) }
        guard let session else {
            return AudioEnginePosition(token: nil, frame: 0, sampleRate: 0)
        }
        // A seek not yet reached: its target (the frames before it are being dropped).
        let seeking = pendingSeek.flatMap { seek in
            session.shared.appliedSeekSerial.load(ordering: .sequentiallyConsistent) < seek.serial ? seek.frame : nil
        }
        let countsOn = session.device.capabilities.contains(.realTimeClock)
        let (token, heardFrame) = session.shared.readPosition(
            sampleRate: countsOn ? session.device.configuration.sampleRate : 0)
        let frame = seeking ?? heardFrame
        return AudioEnginePosition(token: token.map { .init(rawValue: $0) }, frame: frame,
                                   sampleRate: session.device.configuration.sampleRate)
    }

    public var statistics: AudioEngineStatistics {
        guard let session = control.withLock({ $0.session }) else {
            return AudioEngineStatistics(device: nil, isRealtime: false, underruns: 0, xruns: 0, latencyInFrames: 0,
                                         skips: .init())
        }
        let shared = session.shared
        var skips = AudioEngineStatistics.SkipSources()
        skips.deviceBuffer = shared.skipsFromDeviceBuffer.load(ordering: .relaxed)
        skips.ring = shared.skipsFromRing.load(ordering: .relaxed)
        skips.preroll = shared.skipsFromPreroll.load(ordering: .relaxed)
        skips.decoder = shared.skipsWaitingForDecoder.load(ordering: .relaxed)
        var timings = AudioEngineStatistics.StartTimings()
        timings.commandWake = shared.lastCommandWake.load(ordering: .relaxed)
        timings.drop = shared.lastDrop.load(ordering: .relaxed)
        timings.prepare = shared.lastPrepare.load(ordering: .relaxed)
        timings.write = shared.lastStartWrite.load(ordering: .relaxed)
        timings.start = shared.lastStart.load(ordering: .relaxed)
        return AudioEngineStatistics(device: session.device.configuration, deviceName: session.device.name,
                                     isRealtime: shared.isRealtime.load(ordering: .relaxed),
                                     underruns: shared.underruns.load(ordering: .relaxed),
                                     underrunSilenceFrames: shared.underrunSilenceFrames.load(ordering: .relaxed),
                                     xruns: shared.xruns.load(ordering: .relaxed),
                                     latencyInFrames: shared.latencyFrames.load(ordering: .relaxed),
                                     skips: skips, startTimings: timings)
    }

    /// Makes the audio thread act as if the device's next write failed with `error` (a
    /// negative errno such as -EPIPE): for tests of the recovery path.
    func simulateDeviceError(_ error: Int32) {
        guard let session = control.withLock({ $0.session }) else { return }
        session.shared.simulatedDeviceError.store(Int(error), ordering: .relaxed)
        session.audioWake.signal()
    }

    /// Whether the next entry's first frames wait in a preroll slot (skips take them at once).
    public var isNextEntryPrerolled: Bool {
        guard let session = control.withLock({ $0.session }) else { return false }
        return session.prerollSlots.contains { $0.state.load(ordering: .acquiring) == PrerollSlot.ready }
    }

    // MARK: - Events

    /// A new stream of the engine's events from now on. Delivered on the decoder thread;
    /// the stream buffers what its reader has not taken yet.
    public func events() -> AsyncStream<AudioEngineEvent> {
        listeners.stream()
    }

    /// Calls `handler` with every event, on the engine's decoder thread, in order.
    /// It must return quickly. Replaces the previous handler; nil removes it.
    public func setEventHandler(_ handler: (@Sendable (AudioEngineEvent) -> Void)?) {
        handlerID.withLock { id in
            if let old = id { listeners.remove(old) }
            id = handler.map { listeners.add($0) }
        }
    }

    /// Passes on an event of `session` while it is the engine's session. A stopped or replaced
    /// session's late events are dropped: its tokens are its provider's, and the next session's
    /// provider may give the same numbers to other entries (a late start of the old session's
    /// could be taken for the new queue's first entry).
    func deliver(_ event: AudioEngineEvent, from session: EngineSession) {
        let isCurrent = control.withLock { state in
            guard state.session === session else {
                if state.isOpening && state.session == nil { state.earlyEvents.append((event, session)) }
                return false
            }
            if event == .queueFinished { state.status = .finished }
            if case .deviceFailed = event { state.status = .stopped }
            if case .volumeChanged(let volume) = event { state.volume = volume }
            return true
        }
        if isCurrent { listeners.emit(event) }
    }

    /// The open session, if any (for tests).
    var currentSession: EngineSession? { control.withLock { $0.session } }

    // MARK: - Session

    private func openSessionIfNeeded(startSeconds: Double) throws(AudioEngineError) -> EngineSession {
        // The session opens on this thread, outside the lock: the first entry's file (a slow
        // disk, a download that has not delivered its first bytes) and the device (a sound
        // server that is slow to answer). Meanwhile the other calls answer at once; a stop()
        // cancels the opening (a download's reads give up within 50 ms of it).
        let stops = stopsRequested.load(ordering: .acquiring)
        let pauses = pausesWhileOpening.load(ordering: .acquiring)
        let givenUp: @Sendable () -> Bool = { [weak self] in
            self.map { $0.stopsRequested.load(ordering: .acquiring) != stops || $0.pausesWhileOpening.load(ordering: .acquiring) != pauses }
                ?? true
        }
        AbandonableWaits.giveUp(onThisThreadWhen: givenUp)
        defer { AbandonableWaits.clear() }
        var begun: (provider: any AudioEntryProvider, crossfadeSeconds: Double, volume: Double?)?
        while begun == nil {
            enum Next { case open(any AudioEntryProvider, Double, Double?), wait, ready(EngineSession) }
            let next = control.withLock { state -> Result<Next, AudioEngineError> in
                if let session = state.session { return .success(.ready(session)) }
                guard let provider = state.provider else { return .failure(.noQueue) }
                if state.isOpening { return .success(.wait) }
                state.isOpening = true
                state.pausedWhileOpening = false
                state.earlyEvents = []
                return .success(.open(provider, state.crossfadeSeconds, state.volume))
            }
            switch try next.get() {
            case .ready(let session): return session
            case .open(let provider, let crossfade, let volume): begun = (provider, crossfade, volume)
            case .wait:
                // Another play() or prepare() is opening: its session is this one's too.
                openingEnded.lock()
                while control.withLock({ $0.isOpening }) { openingEnded.wait() }
                openingEnded.unlock()
                if stopsRequested.load(ordering: .acquiring) != stops { throw .stopped }
            }
        }
        let opened = Result { () throws(AudioEngineError) -> EngineSession in
            try EngineSession(configuration: configuration, provider: begun!.provider, startSeconds: startSeconds,
                              crossfadeSeconds: begun!.crossfadeSeconds, volume: begun!.volume) { [weak self] session, event in
                self?.deliver(event, from: session)
            }
        }
        let early = control.withLock { state -> [(AudioEngineEvent, EngineSession)]? in
            state.isOpening = false
            defer { state.earlyEvents = [] }
            // A stop() (or a new queue, which stops) since this opening began: not started.
            guard case .success(let session) = opened, stopsRequested.load(ordering: .acquiring) == stops,
                  state.session == nil else { return nil }
            state.session = session
            if let volume = state.volume, volume != begun!.volume { session.setVolume(volume) }  // set meanwhile
            return state.earlyEvents.filter { $0.1 === session }
        }
        openingEnded.lock()
        openingEnded.broadcast()
        openingEnded.unlock()
        // A device whose server had not answered, given up by a stop or a pause: not its error.
        if case .failure = opened, givenUp() { throw .stopped }
        let session = try opened.get()
        guard let early else {
            session.close()
            throw .stopped
        }
        // Entries that failed before the first one opened, and events the session sent before
        // it was the engine's, passed on outside the lock (the handler may call back into the
        // engine); nothing is heard before `play()` goes on.
        for (token, error) in session.failuresBeforeFirstEntry { deliver(.entryFailed(token, error), from: session) }
        for (event, _) in early { deliver(event, from: session) }
        return session
    }
}

/// One open stream: the device, the two threads and the queues between them.
final class EngineSession: @unchecked Sendable {
    // @unchecked: every stored property is immutable and itself thread-safe, except
    // `commands`, which is behind a mutex.
    let device: any AudioOutput
    let shared = EngineSharedState()
    let audioWake = WakeSignal()
    let decoderWake = WakeSignal()
    let decoderControl: DecoderControl
    let prerollSlots: [PrerollSlot]
    private let commands: Mutex<RingBuffer<AudioCommand>.Producer>
    /// Entries of the queue that could not be opened before the first that could.
    let failuresBeforeFirstEntry: [(AudioEntry.Token, DecoderError)]
    private var audioThread: PlatformThread?
    private var decoderThread: PlatformThread?
    private let primedCondition = NSCondition()
    private var isPrimed = false
    private var isClosed = false

    /// Called on the audio thread before it enters its loop (allocation tests start counting there).
    static let audioThreadStartHook = Mutex<(@Sendable () -> Void)?>(nil)

    init(configuration: AudioEngineConfiguration, provider: any AudioEntryProvider, startSeconds: Double,
         crossfadeSeconds: Double, volume: Double?,
         onEvent: @escaping @Sendable (EngineSession, AudioEngineEvent) -> Void) throws(AudioEngineError) {
        decoderControl = DecoderControl(crossfadeSeconds: crossfadeSeconds)
        // The first entry that opens decides the stream's rate; failures before it are reported.
        var failures: [(AudioEntry.Token, DecoderError)] = []
        var firstEntry: AudioEntry?
        var firstFile: AudioFileDecoder?
        var cursor: AudioEntry.Token?
        var run = EntryRun(provider)
        while run.mayTry(), let entry = provider.entry(after: cursor) {
            cursor = entry.token
            do {
                firstFile = try AudioFileDecoder.open(entry)
                firstEntry = entry
                break
            } catch {
                if case .abandoned = error.reason { throw .stopped }
                failures.append((entry.token, error))
            }
        }
        guard let firstEntry, let firstFile else { throw .nothingPlayable(failures.map(\.1)) }
        let sampleRate = configuration.sampleRate ?? firstFile.info.sampleRate
        let channelCount = configuration.channelCount
        let request = configuration.pcmRequest(sampleRate: sampleRate)
        // The queues between the threads first: made while a warmed-up device may still be opening.
        let ring = RingBuffer<Float>.make(capacity: configuration.ringCapacityInFrames * channelCount)
        let markers = RingBuffer<SegmentMarker>.make(capacity: 1024)
        let commandQueue = RingBuffer<AudioCommand>.make(capacity: 256)
        let requests = RingBuffer<DecoderRequest>.make(capacity: 256)
        let events = RingBuffer<AudioThreadEvent>.make(capacity: 1024)
        let slots = (0..<2).map { _ in
            PrerollSlot(capacityInFrames: configuration.prerollSizeInFrames, channelCount: channelCount)
        }
        commands = Mutex(commandQueue.producer)
        prerollSlots = slots
        // While a warmed-up device is still opening (`musickit play`: ~0.5–1 ms more here), the
        // first entry's decoder and its first chunk too, for the rate asked for: decoding that
        // chunk (~0.3 ms for Ogg Vorbis) was the longest step between the device being ready and
        // the first write. Not otherwise: a download's first chunk would then wait for its bytes
        // before the device opens, instead of beside it.
        /// The entry frame `startSeconds` is at, at `rate`.
        func startFrame(atRate rate: Int) -> Int { startSeconds.frames(at: rate) }
        let early = WarmDevice.isPending ? try Self.decoderWithFirstChunk(
            entry: firstEntry, opened: firstFile, streamRate: request.sampleRate,
            entryFrame: startFrame(atRate: request.sampleRate), configuration: configuration) : nil

        if let warm = WarmDevice.take(name: configuration.deviceName, fallback: configuration.fallbackDeviceName, request: request) {
            device = warm
        } else {
            do {
                device = try AudioOutputs.open(configuration.deviceName, fallback: configuration.fallbackDeviceName, request: request)
            } catch {
                throw .device(error)
            }
        }
        let streamRate = device.configuration.sampleRate
        let first: EntryDecoder
        let firstEntryFrame = startFrame(atRate: streamRate)
        if let early, early.streamRate == streamRate {
            first = early
        } else {
            // No early decoder (no warm-up), or the device took another rate than asked: a
            // decoder for the device's rate, at the entry's first frame again when the early one
            // read from the file.
            do {
                first = try EntryDecoder(entry: firstEntry, opened: firstFile, streamRate: streamRate,
                                         streamChannels: channelCount, chunkFrames: configuration.decodeChunkInFrames)
                if early != nil || firstEntryFrame > 0 { try first.seek(toEntryFrame: firstEntryFrame) }
            } catch {
                throw .nothingPlayable(failures.map(\.1) + [error])
            }
        }

        if let volume { Self.applyVolume(volume, to: device, shared: shared) }  // before the audio thread reads the gain
        let renderer = Handoff(AudioRenderer(
            ring: ring.consumer, markers: markers.consumer, commands: commandQueue.consumer,
            events: events.producer, requests: requests.producer, prerollSlots: slots, device: device,
            shared: shared, wake: audioWake, decoderWake: decoderWake, firstToken: firstEntry.token.rawValue,
            insertsSilenceOnUnderrun: configuration.underrunBehavior == .insertSilence,
            periodFrames: configuration.renderPeriodFrames(at: streamRate),
            startBufferFrames: configuration.startBufferFrames(at: streamRate)))
        failuresBeforeFirstEntry = failures
        let decoderLoop = Handoff(DecoderLoop(
            ring: ring.producer, markers: markers.producer, requests: requests.consumer,
            audioEvents: events.consumer, prerollSlots: slots, provider: provider, wake: decoderWake,
            audioWake: audioWake, shared: shared, control: decoderControl, device: device,
            streamRate: streamRate, channelCount: channelCount, chunkFrames: configuration.decodeChunkInFrames,
            // Not the deep buffer's multiple: what the device holds already rides out the crossing
            // (the audio thread waits for the decoder above the underrun floor), and a longer lead
            // would let queue changes decide what follows only seconds before a boundary.
            crossingLeadFrames: max(configuration.prerollSizeInFrames, 4 * configuration.startBufferFrames(at: streamRate)),
            first: first, firstEntryFrame: firstEntryFrame, deliver: { [weak self] event in
                guard let self else { return }
                switch event {
                case .primed: self.markPrimed()
                case .engine(let engineEvent): onEvent(self, engineEvent)
                }
            }))

        if let output = device as? any VolumeControlledOutput {
            // Called on the output's thread under its own lock: passed on from a queue, since
            // delivering takes the engine's lock, which `setVolume` holds while it takes the
            // output's (the other order would deadlock).
            let volumeEvents = DispatchQueue(label: "musickit.engine.volume-events")
            output.volumeChangedElsewhere = { [weak self] volume in
                guard let session = self else { return }
                volumeEvents.async { [weak session] in
                    guard let session else { return }
                    onEvent(session, .volumeChanged(volume))
                }
            }
        }
        let priority = configuration.realtimePriority
        let hook = EngineSession.audioThreadStartHook.withLock { $0 }
        audioThread = PlatformThread(name: "musickit-audio") {
            var loop = renderer.take()
            hook?()
            loop.run(realtimePriority: priority)
        }
        let control = decoderControl
        let shared = self.shared
        decoderThread = PlatformThread(name: "musickit-decode") {
            var loop = decoderLoop.take()
            // A preview still downloading must not hold up a stop, a skip or a seek: a read
            // waiting for its next bytes gives up once the session stops or a request comes
            // from the audio thread (every request moves the decoder elsewhere).
            AbandonableWaits.giveUp(onThisThreadWhen: {
                control.isStopRequested
                    || shared.decoderRequestsSent.load(ordering: .acquiring) != shared.decoderRequestsTaken.load(ordering: .relaxed)
            })
            defer { AbandonableWaits.clear() }
            loop.run()
        }
    }

    /// A decoder of `entry` (open in `opened`) for a stream at `streamRate`, at `entryFrame`,
    /// with its first chunk decoded into its carry (the decoder thread writes the carry first).
    /// When that chunk fails, the decoder's first `nextChunk()` on the decoder thread throws the
    /// failure, which is reported and skipped there as before. Nil when the decoder cannot be
    /// made for that rate; throws only when a download's wait was abandoned (a stop).
    private static func decoderWithFirstChunk(
        entry: AudioEntry, opened: AudioFileDecoder, streamRate: Int, entryFrame: Int,
        configuration: AudioEngineConfiguration
    ) throws(AudioEngineError) -> EntryDecoder? {
        let decoder: EntryDecoder
        do {
            decoder = try EntryDecoder(entry: entry, opened: opened, streamRate: streamRate,
                                       streamChannels: configuration.channelCount,
                                       chunkFrames: configuration.decodeChunkInFrames)
        } catch {
            if case .abandoned = error.reason { throw .stopped }
            return nil
        }
        do {
            if entryFrame > 0 { try decoder.seek(toEntryFrame: entryFrame) }
            decoder.carry = Array(try decoder.nextChunk())
        } catch {
            if case .abandoned = error.reason { throw .stopped }
            decoder.deferredError = error
        }
        return decoder
    }

    /// The output's own volume when it has one, else the gain the audio thread applies: then
    /// true (the audio thread has to write what the device holds again, `.applyGain`).
    @discardableResult
    private static func applyVolume(_ volume: Double, to device: any AudioOutput, shared: EngineSharedState) -> Bool {
        if let output = device as? any VolumeControlledOutput {
            output.setVolume(volume)
            return false
        }
        shared.outputGainBits.store(amplitude(forVolume: volume).bitPattern, ordering: .relaxed)
        return true
    }

    func setVolume(_ volume: Double) {
        if Self.applyVolume(volume, to: device, shared: shared) { send(.applyGain) }
    }

    func send(_ command: AudioCommand) {
        shared.commandSentAt.store(monotonicNanoseconds(), ordering: .relaxed)
        let sent = commands.withLock { $0.push(command) }
        precondition(sent, "the audio thread stopped reading commands")
        audioWake.signal()
    }

    private func markPrimed() {
        primedCondition.lock()
        isPrimed = true
        primedCondition.broadcast()
        primedCondition.unlock()
    }

    /// Waits until the first frames are staged for the device (or the queue's end was read).
    func waitUntilPrimed(timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        primedCondition.lock()
        defer { primedCondition.unlock() }
        while !isPrimed {
            if !primedCondition.wait(until: deadline) { return isPrimed }
        }
        return true
    }

    /// Stops both threads and waits for them.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        send(.stop)
        decoderControl.requestStop()
        decoderWake.signal()
        audioThread?.join()
        decoderThread?.join()
        device.close()
    }

    deinit { close() }
}

/// Moves a noncopyable value to the thread that takes it.
final class Handoff<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: set before the thread starts, taken once by that thread.
    private var value: Value?
    init(_ value: consuming Value) { self.value = consume value }
    func take() -> Value { value.take()! }
}
