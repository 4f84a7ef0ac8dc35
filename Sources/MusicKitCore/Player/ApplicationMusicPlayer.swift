import AudioEngine
import Foundation
import PlatformSupport
import Synchronization

extension AudioEngineConfiguration {
    /// The device to play on when none is named (`ApplicationMusicPlayer`, `musickit play`,
    /// musickitd): `pulseaudio` — the PulseAudio or PipeWire server through libpulse, without
    /// ALSA — when a server is there, as desktop players (mpv, MPD) choose; else ALSA's `default`.
    /// The server is the same either way where ALSA's default is its pulse plugin; the native
    /// stream skips the plugin's layers (and its start: Benchmarks/RESULTS.md). (Linux addition)
    ///
    /// A server is there when `PULSE_SERVER` is set (libpulse connects where it says), or when
    /// its socket is where libpulse looks, `$PULSE_RUNTIME_PATH/native`, else
    /// `$XDG_RUNTIME_DIR/pulse/native`: one `stat`, no connection (each connection is work for
    /// the server while the player starts) and no libpulse. A socket a server that died left
    /// behind does not answer: `automatic` falls back to ALSA's `default` then. A server named
    /// only in client.conf or on the X11 root window is not seen: ALSA's `default` reaches it
    /// through the pulse plugin. Sources/CEarlyRequest/EarlyLoad.c looks the same way (a test
    /// compares the two).
    public static var automaticDeviceName: String {
        if ProcessEnvironment.nonEmpty("PULSE_SERVER") != nil { return "pulseaudio" }
        let socket: String
        if let runtime = ProcessEnvironment.nonEmpty("PULSE_RUNTIME_PATH") {
            socket = runtime + "/native"
        } else if let runtime = ProcessEnvironment.nonEmpty("XDG_RUNTIME_DIR") {
            socket = runtime + "/pulse/native"
        } else {
            return "default"
        }
        var status = stat()
        return stat(socket, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK ? "pulseaudio" : "default"
    }

    /// `automaticDeviceName`, falling back to ALSA's `default` when the server does not answer
    /// (or libpulse is missing). (Linux addition)
    public static var automatic: AudioEngineConfiguration {
        var configuration = AudioEngineConfiguration(deviceName: automaticDeviceName)
        if configuration.deviceName != "default" { configuration.fallbackDeviceName = "default" }
        return configuration
    }
}

/// The player that plays in this process, as in Apple's MusicKit, over the `AudioEngine`:
/// gapless through ALSA, the next entry pre-decoded so that a skip is heard within
/// milliseconds.
///
/// ```swift
/// let player = ApplicationMusicPlayer.shared
/// player.queue = [album]            // the tracks load lazily, a page at a time
/// try await player.play()           // returns once the first entry is heard
/// player.queue.currentEntry?.title  // observable: withObservationTracking sees it change
/// ```
///
/// Catalog songs need an Apple Music subscription (`MusicSubscription.canPlayCatalogContent`);
/// library songs (scanned files) play without one. Each entry heard is added to the listening
/// history unless the queue's `affectsListeningHistory` or the account's "Use Listening
/// History" is off.
///
/// Linux additions: `engineConfiguration` (the ALSA device, buffer sizes), `events()` (entries
/// that could not play, the end of the queue, a lost device) and `init(engineConfiguration:)`
/// for players besides `shared`. `MUSICKIT_AUDIO_DEVICE` picks `shared`'s device (else the sound
/// server natively when one is there, else ALSA's `default`).
///
/// Thread safety: every member may be used from any thread. Observation callbacks run on the
/// player's event queue, in the order things were heard.
public final class ApplicationMusicPlayer: MusicPlayer, @unchecked Sendable {
    // @unchecked: mutable state is in `control` (a Mutex); the queue and state lock their own.

    public static let shared = ApplicationMusicPlayer(engineConfiguration: defaultEngineConfiguration)

    /// The configuration `shared` starts with: the device `MUSICKIT_AUDIO_DEVICE` names, else
    /// the sound server natively when one is there, falling back to ALSA's `default`
    /// (`AudioEngineConfiguration.automatic`); `MUSICKIT_PAUSED_RELEASE_SECONDS` sets how long a
    /// paused stream keeps its device (`releaseWhenPausedAfter`; `never` keeps it). (Linux addition)
    public static var defaultEngineConfiguration: AudioEngineConfiguration {
        var configuration = ProcessEnvironment.nonEmpty("MUSICKIT_AUDIO_DEVICE").map { AudioEngineConfiguration(deviceName: $0) }
            ?? .automatic
        if let text = ProcessEnvironment.nonEmpty("MUSICKIT_PAUSED_RELEASE_SECONDS") {
            if text == "never" {
                configuration.releaseWhenPausedAfter = nil
            } else if let seconds = Double(text), seconds.isFinite, seconds >= 0 {
                configuration.releaseWhenPausedAfter = .milliseconds((seconds * 1000).clampedInt())
            }
        }
        return configuration
    }

    /// The application player's queue: a `MusicPlayer.Queue` whose entries can be read and
    /// changed.
    public class Queue: MusicPlayer.Queue, @unchecked Sendable {
        // Apple's application queue declares MusicPlayer.Queue's initializers again.

        /// A queue of `playableItems`, starting at `startPlayableItem` (the first when nil).
        public required init<S: Sequence, PlayableMusicItemType: PlayableMusicItem>(
            for playableItems: S, startingAt startPlayableItem: S.Element? = nil
        ) where S.Element == PlayableMusicItemType {
            super.init(for: playableItems, startingAt: startPlayableItem)
        }

        /// A queue of entries, starting at `startEntry` (the first when nil).
        public required init<S: Sequence>(_ entries: S, startingAt startEntry: S.Element? = nil) where S.Element == Entry {
            super.init(entries, startingAt: startEntry)
        }

        /// The tracks of `album`, loaded as they are needed, starting at `startTrack`.
        public required init(album: Album, startingAt startTrack: Track) {
            super.init(album: album, startingAt: startTrack)
        }

        /// The entries of `playlist`, loaded as they are needed, starting at `startPlaylistEntry`.
        public required init(playlist: Playlist, startingAt startPlaylistEntry: Playlist.Entry) {
            super.init(playlist: playlist, startingAt: startPlaylistEntry)
        }

        /// `[song1, album, playlist]`: songs as entries, albums' and playlists' tracks lazily.
        public required convenience init(arrayLiteral elements: any PlayableMusicItem...) {
            self.init(items: elements)
        }

        package override init(items: [any PlayableMusicItem], startingAt startIndex: Int? = nil) {
            super.init(items: items, startingAt: startIndex)
        }

        /// The entries, in order. Reading them does not load a lazy album or playlist; an entry
        /// is loaded (with its page) when it is read. Setting them changes what plays next.
        public var entries: ApplicationMusicPlayer.Queue.Entries {
            get { Entries(storage: contents) }
            set {
                guard newValue.storage !== snapshot.contents else { return }
                replaceContents(newValue.storage)
            }
        }
    }

    /// What happened while playing that the state does not show (Linux addition).
    public enum Event: Sendable, Equatable {
        /// An entry started to be heard.
        case entryStarted(MusicPlayer.Queue.Entry)
        /// An entry could not be played and was skipped.
        case entryFailed(MusicPlayer.Queue.Entry?, reason: String)
        /// The last entry was heard to its end.
        case queueFinished
        /// The audio device failed; `play()` opens it again.
        case interrupted(reason: String)
        /// A heard entry could not be added to the listening history.
        case historyNotRecorded(MusicPlayer.Queue.Entry, reason: String)
        /// Another program (the desktop's mixer) changed the player's `volume`.
        case volumeChanged(Double)
    }

    private let playerQueue: Queue
    private let provider: PlayerQueueProvider
    /// The stores and rules: containers' pages, what an entry plays, the listening history.
    private let services: PlaybackServices
    /// Engine events are handled here, in order, off the engine's threads.
    private let eventQueue = DispatchQueue(label: "musickit.player.events")
    package let listeners = EventListeners<Event>()

    private enum Intent { case stopped, playing, paused }

    private struct Control {
        var engine: AudioEngine
        var intent: Intent = .stopped
        var startWaiters: [CheckedContinuation<Void, any Error>] = []
        /// Skips waiting for the entry they go to to be heard.
        var entryWaiters: [UUID: @Sendable () -> Void] = [:]
        /// Why entries failed since `play()` started the queue (for its error).
        var failures: [String] = []
        var heardToken: AudioEntry.Token?
        var recordedToken: AudioEntry.Token?
        var pendingStartTime: TimeInterval?
        /// Where the open stream was asked to start: `playbackTime` until the engine reports
        /// the position of what it plays (while it prepares, and after a cold `play()`).
        var streamStartTime: TimeInterval?

        /// A start that failed: the next one starts where this one was asked to.
        mutating func restoreStartTime() {
            if pendingStartTime == nil { pendingStartTime = streamStartTime }
            streamStartTime = nil
        }
        /// The queue or the modes changed since the engine last asked what comes next: its
        /// pre-decoded next entry may be the old one, so the next skip asks again.
        var nextMayBeStale = false
        var seeking: Seeking?
        var transition: MusicPlayer.Transition = .none
        /// See `volume`; nil until set.
        var volume: Double?
        var loudnessMode: LoudnessMode?
        /// The account's Sound Check as last read (at a start or a change of modes), which the
        /// player follows while `loudnessMode` is nil.
        var accountSoundCheck: LoudnessMode?
        var loudnessPreampDB: Double = 0
        /// Counts pauses, so that a release scheduled by one pause is not done after a later one.
        var pauseCount = 0
        /// See `pausesAfterEachEntry`.
        var pausesAfterEachEntry = false
    }

    private struct Seeking: @unchecked Sendable {
        // @unchecked: DispatchSourceTimer is thread-safe (it is only cancelled from elsewhere).
        let timer: DispatchSourceTimer
        let statusBefore: PlaybackStatus
    }

    private let control: Mutex<Control>
    /// Held by a resume and by the release of a paused output (`releaseOutput`), so that the
    /// one does not fall between the other's check and its act.
    private let transport = NSLock()

    /// A player on its own engine (Linux addition; Apple's apps use `shared`).
    public convenience init(engineConfiguration: AudioEngineConfiguration) {
        self.init(engineConfiguration: engineConfiguration, services: PlaybackServices())
    }

    init(engineConfiguration: AudioEngineConfiguration, services: PlaybackServices) {
        let queue = Queue(items: [])
        playerQueue = queue
        provider = PlayerQueueProvider(queue: queue)
        self.services = services
        control = Mutex(Control(engine: AudioEngine(configuration: engineConfiguration)))
        super.init()
        attach(control.withLock { $0.engine })
        queue.onChange = { [weak self] _, change in self?.queueChanged(change) }
        state.onModeChange = { [weak self] in self?.modesChanged() }
        state.onRateChange = { [weak self] rate in self?.rateChanged(rate) }
        // The listening history listens to what is heard, like any other listener.
        listeners.add { [weak self] event in
            guard case .entryStarted(let entry) = event, let self, playerQueue.affectsListeningHistory else { return }
            services.recordPlay(of: entry) { [weak self] reason in
                self?.listeners.emit(.historyNotRecorded(entry, reason: reason))
            }
        }
    }

    deinit {
        control.withLock { $0.engine }.stop()
    }

    private var engine: AudioEngine { control.withLock { $0.engine } }

    private func attach(_ engine: AudioEngine) {
        engine.setQueue(provider)
        engine.setCrossfade(seconds: control.withLock { $0.transition }.overlapSeconds)
        if let volume = control.withLock({ $0.volume }) { engine.setVolume(volume) }
        engine.setEventHandler { [weak self] event in
            guard let self else { return }
            eventQueue.async { self.handle(event) }
        }
    }

    /// The engine's settings (Linux addition). Setting them stops playback; the next `play()`
    /// opens the new device.
    public var engineConfiguration: AudioEngineConfiguration {
        get { engine.configuration }
        set {
            let old = control.withLock { control -> AudioEngine in
                defer { control.engine = AudioEngine(configuration: newValue); control.intent = .stopped }
                return control.engine
            }
            old.setEventHandler(nil)
            old.stop()
            attach(engine)
            state.setPlaybackStatus(.stopped)
        }
    }

    /// How an entry gives way to the next one: `.none` (gapless, the default) or a crossfade.
    /// Skips and jumps cut; a change applies from the next boundary not yet decoded.
    public var transition: MusicPlayer.Transition {
        get { control.withLock { $0.transition } }
        set {
            control.withLock { $0.transition = newValue }
            engine.setCrossfade(seconds: newValue.overlapSeconds)
        }
    }

    /// The player's volume, 0...1 (Linux addition: on Apple platforms the volume is the
    /// system's). On a PulseAudio or PipeWire server it is the player's stream volume there, as
    /// the desktop's mixer shows it; on an ALSA device the player scales the samples by the same
    /// curve (`AudioEngine.setVolume`). A change is heard at once. 1 until set; kept across
    /// streams and devices.
    public var volume: Double {
        get { control.withLock { $0.volume } ?? 1 }
        set {
            let clamped = AudioEngine.clampedVolume(newValue)
            control.withLock { $0.volume = clamped }
            engine.setVolume(clamped)
        }
    }

    /// What the engine's device agreed to, its underruns and skips (Linux addition).
    public var engineStatistics: AudioEngineStatistics { engine.statistics }

    /// The queue. Setting it stops playback and keeps this queue object (views holding it
    /// see the new entries); `play()` starts the new queue at its current entry.
    public var queue: ApplicationMusicPlayer.Queue {
        get { playerQueue }
        set {
            guard newValue !== playerQueue else { return }
            stopEngine()
            control.withLock { $0.pendingStartTime = nil }
            playerQueue.adopt(newValue)
            state.setPlaybackStatus(.stopped)
        }
    }

    /// A stream of the player's events from now on (Linux addition).
    public func events() -> AsyncStream<Event> {
        listeners.stream()
    }

    // MARK: - Transport

    public override var isPreparedToPlay: Bool { isStreamOpen }

    /// Starts the queue at its current entry, or resumes after `pause()`. Returns when the
    /// entry is heard. Throws `MusicPlayer.PlaybackError` when the queue is empty, when its
    /// current entry is catalog content without a subscription, when nothing in it plays,
    /// or when the device fails; `MusicSubscription.Error.permissionDenied` for catalog
    /// content when the app is not authorized.
    public override func play() async throws {
        endSeekingTimer()
        let engine = self.engine
        switch engine.status {
        case .paused:
            // Not while the output is being released (then it is a cold start, below).
            let resumed = transport.withLock { () -> Bool in
                guard engine.status == .paused else { return false }
                control.withLock { $0.intent = .playing }
                engine.resume()
                return true
            }
            if resumed {
                state.setPlaybackStatus(.playing)
                return
            }
            try await start(engine, prepared: false)
        case .playing:
            state.setPlaybackStatus(.playing)
            return
        case .prepared:
            try await start(engine, prepared: true)
        case .stopped, .finished:
            try await start(engine, prepared: false)
        }
    }

    private func start(_ engine: AudioEngine, prepared: Bool) async throws {
        let startSeconds = prepared ? 0 : try await prepareSession(engine)
        control.withLock { $0.intent = .playing }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            control.withLock { $0.startWaiters.append(continuation) }
            Self.offThePool { [self] in
                // A pause() or stop() that came before a start's own thread ran has answered
                // the waiters already: nothing is started for them.
                guard control.withLock({ $0.intent == .playing }) else { return }
                do throws(AudioEngineError) {
                    try engine.play(startingAtSeconds: startSeconds)
                } catch {
                    // Every play() waiting for this start (this one among them) gets the error.
                    let waiters = control.withLock { control in
                        control.intent = .stopped
                        control.restoreStartTime()
                        defer { control.startWaiters = [] }
                        return control.startWaiters
                    }
                    for waiter in waiters { waiter.resume(throwing: Self.startError(error)) }
                }
            }
        }
    }

    /// Runs a start's blocking part (opening the device and the first entry: a sound server's
    /// answers, a download's first bytes) where it holds no thread of the concurrency pool and
    /// not the main actor: on this thread when it is one `waitFor` blocks anyway (the CLI,
    /// musickitd: no hand-off on the path to the first sound), else on a thread of its own,
    /// started on another CPU than this one (see `PlatformThread`).
    private static func offThePool(_ work: @escaping @Sendable () -> Void) {
        if WaitingThreads.includesCurrent {
            work()
        } else {
            PlatformThread.detached(name: "musickit.start", startsOnAnotherCPU: true, body: work)
        }
    }

    /// Checks the rules for the queue's current entry and points the engine at it. Returns
    /// where in the entry to start (seconds, from a `playbackTime` set before playing).
    private func prepareSession(_ engine: AudioEngine) async throws -> Double {
        let (contents, currentID) = playerQueue.snapshot
        guard contents.count > 0, let currentID, let index = contents.index(ofEntryID: currentID),
              let current = contents.entry(at: index) else { throw PlaybackError.emptyQueue }
        // Whether catalog content plays, for the session: decided here when it starts on catalog
        // content (which may not play); otherwise by the first catalog entry's read of it (the
        // decoder thread's, once), so that a file starts without reading the account.
        let catalogAccess: PlaybackServices.SessionCatalogAccess
        if PlaybackServices.isCatalogContent(current.resource) && current.unavailableReason == nil {
            let access = try PlaybackServices.catalogAccess(in: .current)
            guard access == .allowed else { throw PlaybackError.subscriptionRequired(title: current.title) }
            catalogAccess = .decided(access)
        } else {
            // Library songs play without authorization; the account is read when a catalog entry comes.
            catalogAccess = .whenNeeded(in: .current)
        }
        giveModesToProvider()
        let startTime = control.withLock { control -> TimeInterval? in
            control.failures = []
            control.heardToken = nil
            control.recordedToken = nil
            // The new stream reads the queue as it is now: what it prerolls next is current.
            control.nextMayBeStale = false
            defer { control.pendingStartTime = nil }
            control.streamStartTime = control.pendingStartTime
            return control.pendingStartTime
        }
        engine.stop()
        provider.reset(startingAt: currentID, catalogAccess: catalogAccess)
        return max(0, (startTime ?? 0) - (current.playedStartTime ?? 0))
    }

    /// Opens the device and decodes the current entry's first frames, so that `play()` only
    /// starts the stream.
    public override func prepareToPlay() async throws {
        let engine = self.engine
        guard engine.status == .stopped || engine.status == .finished else { return }
        let startSeconds = try await prepareSession(engine)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Self.offThePool { [self] in
                do throws(AudioEngineError) {
                    try engine.prepare(startingAtSeconds: startSeconds)
                    continuation.resume()
                } catch {
                    control.withLock { $0.restoreStartTime() }
                    continuation.resume(throwing: Self.startError(error))
                }
            }
        }
    }

    /// What `play()` and `prepareToPlay()` throw for the engine's error: a `stop()` that came
    /// while the first entry was still opening cancels the start, as a stop during any start does.
    private static func startError(_ error: AudioEngineError) -> any Error {
        switch error {
        case .noQueue: PlaybackError.emptyQueue
        case .nothingPlayable(let errors): PlaybackError.nothingPlayable(errors.map(\.description))
        case .device(let device): PlaybackError.audioDevice(device.description)
        case .timedOut(let what): PlaybackError.timedOut(what)
        case .stopped: CancellationError()
        }
    }

    /// Pauses. A `play()` still starting (its first entry opening, a download's first bytes
    /// awaited) returns, and the stream stays unstarted until `play()`.
    public override func pause() {
        endSeekingTimer()
        let (starting, waiters) = control.withLock { control in
            if control.intent == .playing { control.intent = .paused }
            defer { control.startWaiters = [] }
            return (!control.startWaiters.isEmpty, control.startWaiters)
        }
        engine.pause()
        // Interrupted (the device failed): paused there; play() starts where it was heard.
        if engine.status == .paused || starting || state.playbackStatus == .interrupted { state.setPlaybackStatus(.paused) }
        for waiter in waiters { waiter.resume() }
        if engine.status == .paused, let after = engine.configuration.releaseWhenPausedAfter {
            let pause = control.withLock { control in
                control.pauseCount += 1
                return control.pauseCount
            }
            let (seconds, attoseconds) = after.components
            DispatchQueue.global().asyncAfter(deadline: .now() + Double(seconds) + Double(attoseconds) * 1e-18) { [weak self] in
                self?.releaseOutput(ifStillIn: pause)
            }
        }
    }

    /// Still paused since pause number `pause`: the stream is closed (device, threads) and the
    /// next `play()` starts where it was paused (`AudioEngineConfiguration.releaseWhenPausedAfter`).
    private func releaseOutput(ifStillIn pause: Int) {
        transport.withLock {
            let engine = self.engine
            guard engine.status == .paused, state.playbackStatus == .paused else { return }
            let heard = playbackTime
            let released = control.withLock { control -> Bool in
                guard control.pauseCount == pause, control.intent != .playing, control.engine === engine else { return false }
                control.intent = .stopped
                control.pendingStartTime = heard
                control.streamStartTime = nil
                return true
            }
            guard released else { return }
            engine.stop()
        }
    }

    /// A start given up by `cancelOpeningStart()`.
    package enum GivenUpStart { case play, preparation }

    /// Gives up a `play()` or `prepareToPlay()` whose first entry or device is still opening (it
    /// throws `CancellationError`; the time it was to start at is kept for the next start), and
    /// nothing else: a stream that is open plays on. Nil when no start was opening. For the
    /// system player's daemon, where a later client's request supersedes a stuck start.
    package func cancelOpeningStart() -> GivenUpStart? {
        let intent = control.withLock { $0.intent }
        guard engine.cancelOpening() else { return nil }
        return intent == .playing ? .play : .preparation
    }

    /// Stops playback; the queue and its current entry stay, `play()` starts that entry over.
    public override func stop() {
        endSeekingTimer()
        stopEngine()
        state.setPlaybackStatus(.stopped)
    }

    private func stopEngine() {
        let (engine, waiters) = control.withLock { control in
            control.intent = .stopped
            control.streamStartTime = nil
            defer { control.startWaiters = [] }
            return (control.engine, control.startWaiters)
        }
        engine.stop()
        for waiter in waiters { waiter.resume(throwing: CancellationError()) }
        resumeEntryWaiters()
    }

    /// Whether the engine has a stream open (playing, paused or prepared).
    private var isStreamOpen: Bool {
        switch engine.status {
        case .prepared, .playing, .paused: true
        case .stopped, .finished: false
        }
    }

    /// The entry being heard (or the queue's current one when nothing is).
    private var heardEntry: (token: AudioEntry.Token?, entry: MusicPlayer.Queue.Entry?) {
        let token = engine.position.token ?? control.withLock { $0.heardToken }
        if let token, let issued = provider.issued(token) { return (token, issued.entry) }
        return (nil, playerQueue.currentEntry)
    }

    /// Under shuffle, what is heard after the current entry, as far as it is decided: the next
    /// entry once the engine has asked for it (ahead of time, while the current one plays), and
    /// how many more this round plays in an order drawn as it goes. Nil when not shuffling.
    /// (For the CLI's "Up next", which otherwise lists the queue's order.)
    package var shuffleAhead: (next: MusicPlayer.Queue.Entry?, unplayed: Int)? {
        provider.shuffleAhead(of: heardEntry.token, count: playerQueue.snapshot.contents.count)
    }

    public override func skipToNextEntry() async throws {
        guard let skip = nextEntrySkip() else { return }
        await waitForEntryChange(skip)
    }

    /// Decides where a skip goes and returns the engine call that makes it; nil when nothing
    /// is left to call (nothing plays: the current entry moved; the queue ended: stopped; or
    /// paused or prepared on the last entry).
    private func nextEntrySkip() -> (() -> Void)? {
        let engine = self.engine
        let (contents, _) = playerQueue.snapshot
        guard isStreamOpen else {
            // Nothing plays: move the current entry.
            if let id = playerQueue.currentEntryID, let index = contents.index(ofEntryID: id),
               let next = contents.entry(at: index + 1) ?? (state.repeatMode == .all ? contents.entry(at: 0) : nil) {
                playerQueue.setCurrentEntryID(next.id)
                control.withLock { $0.pendingStartTime = nil }
            }
            return nil
        }
        let pendingJump = provider.pendingJumpEntryID
        if state.shuffleMode != .songs, (state.repeatMode ?? MusicPlayer.RepeatMode.none) == MusicPlayer.RepeatMode.none,
           control.withLock({ $0.intent != .playing }), let id = pendingJump ?? playerQueue.currentEntryID,
           let index = contents.index(ofEntryID: id), index == contents.count - 1 {
            // Prepared or paused on the last entry: there is nothing to skip to, and nothing
            // plays that could finish (the engine would only finish the queue at the next play).
            return nil
        }
        // The provider answers nothing after an entry when playback pauses after each one: a
        // skip names the entry it goes to, as a jump (the next in the queue's order, shuffled
        // or not).
        let pausesAfterEntry = control.withLock { $0.pausesAfterEachEntry }
        if pendingJump != nil || (state.repeatMode == .one && state.shuffleMode != .songs) || pausesAfterEntry {
            // From the entry a jump is headed for (not heard yet), or out of a repeated entry
            // (repeat one repeats at the end of an entry; a skip goes on).
            guard let id = pendingJump ?? heardEntry.entry?.id, let index = contents.index(ofEntryID: id) else {
                return { engine.skipToNextEntry() }
            }
            let next = contents.entry(at: index + 1) ?? (state.repeatMode == MusicPlayer.RepeatMode.none ? nil : contents.entry(at: 0))
            guard let next else {
                stop()
                return nil
            }
            provider.jump(to: next.id)
            return { engine.skipToNextEntryAskingProvider() }
        }
        let asking = control.withLock { control in defer { control.nextMayBeStale = false }; return control.nextMayBeStale }
        return { asking ? engine.skipToNextEntryAskingProvider() : engine.skipToNextEntry() }
    }

    /// Runs `skip` and waits until the entry it goes to is heard (so that `queue.currentEntry`
    /// is that entry when a skip returns), the queue ends, playback stops, or 2 s pass.
    private func waitForEntryChange(_ skip: () -> Void) async {
        let id = UUID()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            control.withLock { $0.entryWaiters[id] = { continuation.resume() } }
            skip()
            Task { [weak self] in
                try? await Task.sleep(for: .seconds(2))
                self?.control.withLock { $0.entryWaiters.removeValue(forKey: id) }?()
            }
        }
    }

    /// `skipToNextEntry()` for a thread that may block (the system player's daemon serves each
    /// client on one): the engine is called on this thread at once — no hop to a task first —
    /// and the call returns when the next entry is heard (or as `skipToNextEntry()` returns).
    package func skipToNextEntryBlocking() {
        guard let skip = nextEntrySkip() else { return }
        let id = UUID()
        let heard = DispatchSemaphore(value: 0)
        control.withLock { $0.entryWaiters[id] = { heard.signal() } }
        skip()
        if heard.wait(timeout: .now() + 2) == .timedOut {
            _ = control.withLock { $0.entryWaiters.removeValue(forKey: id) }
        }
    }

    private func resumeEntryWaiters() {
        let waiters = control.withLock { control in
            defer { control.entryWaiters = [:] }
            return control.entryWaiters
        }
        for waiter in waiters.values { waiter() }
    }

    /// The previous entry, or the start of this one when it has played for more than
    /// `restartThreshold` seconds (or it is the first).
    public override func skipToPreviousEntry() async throws {
        let (contents, _) = playerQueue.snapshot
        if isStreamOpen && playbackTime > ApplicationMusicPlayer.restartThreshold {
            restartCurrentEntry()
            return
        }
        let (token, heard) = heardEntry
        let pendingJump = provider.pendingJumpEntryID
        var previous: MusicPlayer.Queue.Entry?
        if state.shuffleMode == .songs, pendingJump == nil, let token {
            previous = provider.playedBefore(token)
        } else if let id = pendingJump ?? heard?.id, let index = contents.index(ofEntryID: id), index > 0 {
            previous = contents.entry(at: index - 1)
        }
        guard let previous else {
            restartCurrentEntry()
            return
        }
        if isStreamOpen {
            provider.jump(to: previous.id)
            await waitForEntryChange { engine.skipToNextEntryAskingProvider() }
        } else {
            playerQueue.setCurrentEntryID(previous.id)
            control.withLock { $0.pendingStartTime = nil }
        }
    }

    /// How far into an entry `skipToPreviousEntry()` restarts it instead (seconds).
    /// (Linux addition)
    public static let restartThreshold: TimeInterval = 3

    public override func restartCurrentEntry() {
        if isStreamOpen {
            engine.seek(toSeconds: 0)  // the entry's start (its startTime, when it has one)
        } else {
            control.withLock { $0.pendingStartTime = nil }
        }
    }

    /// Seconds into the current entry, as heard. Setting it seeks (before `play()`, playback
    /// starts there). Checked here, the one place every client's time comes through (the
    /// CLI, the wire, MPD, MPRIS, the saved state): below 0 is 0; past the entry's end (or
    /// infinite) is its end, so the entry finishes, as an `AVPlayer` seek past the end does;
    /// NaN, or infinite when the end is unknown, is ignored.
    public override var playbackTime: TimeInterval {
        get {
            let position = engine.position
            if let token = position.token, let issued = provider.issued(token) {
                // Within the entry: a device that plays faster than real time, or silence
                // inserted on an underrun, never shows a time past the entry's end.
                let seconds = (issued.audio.startTime ?? 0) + position.seconds
                let end = issued.audio.endTime ?? issued.entry.itemDuration
                return end.map { min(seconds, $0) } ?? seconds
            }
            // Preparing (the engine is still stopped) or starting: where it was asked to start.
            let ended = engine.status == .finished
            return control.withLock { $0.pendingStartTime ?? (ended ? nil : $0.streamStartTime) } ?? 0
        }
        set {
            guard !newValue.isNaN else { return }
            var seconds = max(0, newValue)
            if let end = heardEntry.entry.flatMap({ $0.playedEndTime ?? $0.itemDuration }) { seconds = min(seconds, end) }
            guard seconds.isFinite else { return }
            if isStreamOpen {
                let offset = heardEntry.entry?.playedStartTime ?? 0
                engine.seek(toSeconds: max(0, seconds - offset))
            } else {
                control.withLock { $0.pendingStartTime = seconds }
            }
        }
    }

    // MARK: - Seeking

    /// Seeking moves through the entry at this many times real time.
    /// (Linux addition)
    public static let seekingRate: Double = 4

    public override func beginSeekingForward() { beginSeeking(rate: ApplicationMusicPlayer.seekingRate) }

    public override func beginSeekingBackward() { beginSeeking(rate: -ApplicationMusicPlayer.seekingRate) }

    public override func endSeeking() {
        guard let seeking = endSeekingTimer() else { return }
        state.setPlaybackStatus(seeking.statusBefore == .playing && engine.status == .playing ? .playing
                                : engine.status == .paused ? .paused : seeking.statusBefore)
    }

    /// Stops the seeking steps; returns what seeking was doing (nil when it was not).
    @discardableResult
    private func endSeekingTimer() -> Seeking? {
        let seeking = control.withLock { control -> Seeking? in
            defer { control.seeking = nil }
            return control.seeking
        }
        seeking?.timer.cancel()
        return seeking
    }

    /// Moves the position at `rate` times real time, a step every 250 ms, until `endSeeking()`.
    private func beginSeeking(rate: Double) {
        guard isStreamOpen else { return }
        endSeekingTimer()
        let statusBefore = state.playbackStatus
        let timer = DispatchSource.makeTimerSource(queue: eventQueue)
        let stepSeconds = 0.25
        let playing = engine.status == .playing
        timer.schedule(deadline: .now() + stepSeconds, repeating: stepSeconds)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            let position = engine.position
            // While playing the position moves on by itself; the seek adds the rest.
            let step = rate * stepSeconds - (playing ? stepSeconds : 0)
            let duration = position.token.flatMap { provider.issued($0)?.entry.resource.duration() }
            let target = position.seconds + step
            if let duration, target >= duration {
                engine.skipToNextEntry()
            } else {
                engine.seek(toSeconds: max(0, target))
            }
        }
        control.withLock { $0.seeking = Seeking(timer: timer, statusBefore: statusBefore == .seekingForward
                                                    || statusBefore == .seekingBackward ? .playing : statusBefore) }
        state.setPlaybackStatus(rate > 0 ? .seekingForward : .seekingBackward, rate: Float(rate))
        timer.resume()
    }

    private func rateChanged(_ rate: Float) {
        if rate == 0 {
            pause()
        } else if rate == 1 {
            endSeeking()
            if engine.status == .paused { engine.resume(); state.setPlaybackStatus(.playing) }
        } else {
            beginSeeking(rate: Double(rate))
        }
    }

    // MARK: - Following the queue and the modes

    private func queueChanged(_ change: MusicPlayer.Queue.Change) {
        switch change {
        case .entries:
            control.withLock { $0.nextMayBeStale = true }
            provider.queueDidChange()
            engine.queueDidChange()
        case .currentEntry:
            guard isStreamOpen, let id = playerQueue.currentEntryID else { return }
            // Play the new current entry now.
            provider.jump(to: id)
            engine.skipToNextEntryAskingProvider()
        }
    }

    private func modesChanged() {
        control.withLock { $0.nextMayBeStale = true }
        giveModesToProvider()
        engine.queueDidChange()
    }

    /// The modes that decide what comes next, as the provider reads them.
    private func giveModesToProvider() {
        provider.setModes(repeatMode: state.repeatMode ?? .none, shuffles: state.shuffleMode == .songs,
                          pausesAfterEachEntry: pausesAfterEachEntry)
        provider.setNormalization(loudnessNormalization)
    }

    /// Loudness normalization from the songs' ReplayGain tags (Linux addition: Apple's Sound Check
    /// is a system setting). `off`, the default, plays every file as it is (bit-exact); `track`
    /// brings each song to ReplayGain 2.0's −18 LUFS; `album` keeps an album's songs at one
    /// gain, so its dynamics and gapless joins stay; `auto` is `album` unless shuffling (MPD's
    /// rule). Songs without tags play as they are. Applies from the next entry decoded.
    public enum LoudnessMode: String, Sendable, CaseIterable, Codable {
        case off, track, album, auto
    }

    /// The player's loudness normalization (see `LoudnessMode`): the account's Sound Check
    /// (`musickit account --sound-check`, read at each start) until set here (Linux addition).
    public var loudnessMode: LoudnessMode {
        get { control.withLock { $0.loudnessMode ?? $0.accountSoundCheck } ?? readAccountSoundCheck() }
        set {
            control.withLock { $0.loudnessMode = newValue }
            giveModesToProvider()
            engine.queueDidChange()
        }
    }

    /// The mode set on this player, nil while it follows the account (what musickitd keeps).
    package var loudnessModeSetHere: LoudnessMode? { control.withLock { $0.loudnessMode } }

    /// Added to every ReplayGain gain, in dB, −15…15 (the songs' peaks still keep them from
    /// clipping) (Linux addition).
    public var loudnessPreampDB: Double {
        get { control.withLock { $0.loudnessPreampDB } }
        set {
            control.withLock { $0.loudnessPreampDB = newValue.isFinite ? min(max(newValue, -15), 15) : 0 }
            giveModesToProvider()
            engine.queueDidChange()
        }
    }

    /// Reads the account's Sound Check and keeps it for `loudnessMode` (a file read: not for
    /// every look at the mode, such as musickitd's state messages).
    private func readAccountSoundCheck() -> LoudnessMode {
        let mode = AccountStore.soundCheck()
        control.withLock { $0.accountSoundCheck = mode }
        return mode
    }

    /// What the entries decoded from now on play at.
    private var loudnessNormalization: LoudnessNormalization {
        let (setHere, preamp) = control.withLock { ($0.loudnessMode, $0.loudnessPreampDB) }
        switch setHere ?? readAccountSoundCheck() {
        case .off: return .off
        case .track: return .track(preampDB: preamp)
        case .album: return .album(preampDB: preamp)
        case .auto: return state.shuffleMode == .songs ? .track(preampDB: preamp) : .album(preampDB: preamp)
        }
    }

    /// Whether playback stops at the end of each entry, paused at the start of the next one
    /// (`play()` goes on there), unless `state.repeatMode` is `.one`. Not Apple's: MPD's
    /// `single` with `repeat` off, for the system player's MPD clients.
    package var pausesAfterEachEntry: Bool {
        get { control.withLock { $0.pausesAfterEachEntry } }
        set {
            let changed = control.withLock { control in
                defer { control.pausesAfterEachEntry = newValue }
                return control.pausesAfterEachEntry != newValue
            }
            if changed { modesChanged() }
        }
    }

    // MARK: - Engine events (event queue)

    private func handle(_ event: AudioEngineEvent) {
        switch event {
        case .entryStarted(let token, _):
            guard let issued = provider.started(token) else { return }
            playerQueue.setCurrentEntryID(issued.entry.id)
            state.setAudioVariant(PlaybackServices.audioVariant(of: issued.audio.source))
            // The skips waiting for this entry are taken in the same step as the starts: a skip
            // asked for once `play()` has returned (resumed just below) waits for the entry after.
            let (isNewEntry, intent, waiters, entryWaiters, seeking) = control.withLock { control in
                defer { control.startWaiters = [] }
                let isNew = control.recordedToken != token
                control.heardToken = token
                control.recordedToken = token
                var entryWaiters: [@Sendable () -> Void] = []
                if isNew {
                    entryWaiters = Array(control.entryWaiters.values)
                    control.entryWaiters = [:]
                }
                return (isNew, control.intent, control.startWaiters, entryWaiters, control.seeking != nil)
            }
            if intent == .playing && !seeking { state.setPlaybackStatus(.playing) }
            for waiter in waiters { waiter.resume() }
            for waiter in entryWaiters { waiter() }
            if isNewEntry { listeners.emit(.entryStarted(issued.entry)) }
        case .entryCued(let token):
            // Paused (or prepared), a skip put this entry first: it is the current entry now, and
            // the skips waiting for it return. It is recorded as played when it is heard.
            guard let issued = provider.issued(token) else { return }
            playerQueue.setCurrentEntryID(issued.entry.id)
            let entryWaiters = control.withLock { control -> [@Sendable () -> Void] in
                guard control.heardToken != token else { return [] }
                control.heardToken = token
                defer { control.entryWaiters = [:] }
                return Array(control.entryWaiters.values)
            }
            for waiter in entryWaiters { waiter() }
        case .entryFailed(let token, let error):
            let reason = error.description
            control.withLock { $0.failures.append(reason) }
            listeners.emit(.entryFailed(provider.issued(token)?.entry, reason: reason))
        case .queueFinished:
            let (waiters, failures, lastToken, pausesAfterEntry) = control.withLock { control in
                control.intent = .stopped
                defer {
                    control.heardToken = nil
                    control.startWaiters = []
                }
                return (control.startWaiters, control.failures, control.heardToken, control.pausesAfterEachEntry)
            }
            let contents = playerQueue.snapshot.contents
            if pausesAfterEntry, state.repeatMode != .one, let lastToken, let last = provider.issued(lastToken)?.entry,
               let index = contents.index(ofEntryID: last.id), let next = contents.entry(at: index + 1) {
                // Paused at the start of the next entry (MPD's `single`).
                playerQueue.setCurrentEntryID(next.id)
                control.withLock { $0.pendingStartTime = nil }
                state.setPlaybackStatus(.paused)
            } else {
                // Back to the start of the queue, stopped, as the Music app does.
                playerQueue.setCurrentEntryID(contents.entry(at: 0)?.id)
                state.setPlaybackStatus(.stopped)
            }
            for waiter in waiters { waiter.resume(throwing: PlaybackError.nothingPlayable(failures)) }
            resumeEntryWaiters()
            listeners.emit(.queueFinished)
        case .deviceFailed(let error):
            // Where it was heard: the next play() starts there (on a device that is back).
            let heardTime = playbackTime
            let waiters = control.withLock { control in
                control.intent = .stopped
                control.pendingStartTime = heardTime
                defer { control.startWaiters = [] }
                return control.startWaiters
            }
            endSeekingTimer()
            state.setPlaybackStatus(.interrupted)
            for waiter in waiters { waiter.resume(throwing: PlaybackError.audioDevice(error.description)) }
            resumeEntryWaiters()
            listeners.emit(.interrupted(reason: error.description))
        case .volumeChanged(let volume):
            control.withLock { $0.volume = volume }
            listeners.emit(.volumeChanged(volume))
        case .entryFinished, .underrun, .xrun:
            break
        }
    }

    /// Waits until the history writes asked for so far are done (tests, the CLI before exit).
    /// (Linux addition)
    public func waitForHistoryWrites() {
        services.waitForHistoryWrites()
    }
}

extension MusicPlayer {
    /// Why the player could not play (Linux addition: Apple's players report these through
    /// their own errors).
    public enum PlaybackError: Error, Equatable, Sendable, CustomStringConvertible, LocalizedError {
        /// `play()` with nothing in the queue.
        case emptyQueue
        /// The entry is Apple Music catalog content and the account has no subscription.
        case subscriptionRequired(title: String)
        /// No entry of the queue could be played; each reason is listed.
        case nothingPlayable([String])
        /// The audio device could not be opened or failed.
        case audioDevice(String)
        /// The device did not start in time.
        case timedOut(String)

        public var description: String {
            switch self {
            case .emptyQueue: "nothing to play: the queue is empty"
            case .subscriptionRequired(let title):
                "“\(title)” is Apple Music catalog content and needs a subscription "
                    + "(MusicSubscription.current.canPlayCatalogContent is false); library songs play without one"
            case .nothingPlayable(let reasons):
                reasons.isEmpty ? "nothing in the queue could be played" : "nothing in the queue could be played: "
                    + reasons.joined(separator: "; ")
            case .audioDevice(let reason): reason
            case .timedOut(let what): "timed out: \(what)"
            }
        }

        public var errorDescription: String? { description }
    }
}
