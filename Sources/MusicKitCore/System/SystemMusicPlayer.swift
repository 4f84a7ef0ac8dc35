import PlatformSupport
import AudioEngine
import Foundation
import Glibc
import Synchronization

/// The system's music player, as in Apple's MusicKit: one player for the whole session that
/// every app controls and observes, and that keeps playing when the app quits. On Linux it is
/// the per-user daemon `musickitd`, started by the first call that needs it; this class is its
/// client.
///
/// ```swift
/// let player = SystemMusicPlayer.shared
/// player.queue = [album]              // the daemon loads the tracks
/// try await player.play()
/// player.queue.currentEntry?.title    // only the current entry is known to an app, as on iOS
/// ```
///
/// State and the current entry are observable (`withObservationTracking`): they change when the
/// daemon says so, whichever process caused it. Requests that throw in Apple's API throw here
/// when the daemon cannot be reached or refuses; the others (`pause()`, `stop()`, setting
/// `playbackTime`) are sent without waiting.
///
/// Thread safety: every member may be used from any thread.
public final class SystemMusicPlayer: MusicPlayer, @unchecked Sendable {
    // @unchecked: mutable state is in `mirror` (a Mutex); the connection locks its own.

    public static let shared = SystemMusicPlayer(environment: nil)

    private let connection: SystemPlayerConnection
    private let mirrorQueue = SystemPlayerQueue()

    /// What the daemon said last.
    private struct Mirror {
        var time: TimeInterval = 0
        var at: TimeInterval = 0
        var rate: Double = 0
        var prepared = false
        var volume: Double = 1
        var loudnessMode: ApplicationMusicPlayer.LoudnessMode = .off
    }
    private let mirror = Mutex(Mirror())

    /// A player for the daemon of `environment` (nil: `MusicKitEnvironment.current` when it
    /// first connects). `shortLived` (the CLI's commands): no subscription to the daemon's
    /// changes and no reader thread; each request is answered on the calling thread, its
    /// answer bringing the state, so that `musickit next` costs one connection and one round trip.
    ///
    /// `sentAtStart`: a socket on which request 1, asking for `operation` with no arguments,
    /// was already sent (the CLI sends its transport command from a C constructor, before the
    /// Swift runtime starts); the connection adopts it, and the first call of that operation
    /// reads its answer instead of sending it again.
    package init(environment: MusicKitEnvironment?, shortLived: Bool = false,
                 sentAtStart: (descriptor: Int32, operation: String)? = nil) {
        connection = SystemPlayerConnection(environment: environment, subscribing: !shortLived, sentAtStart: sentAtStart)
        super.init()
        mirrorQueue.player = self
        connection.onState = { [weak self] state in self?.apply(state) }
        state.onModeChange = { [weak self] in self?.modesChanged() }
        state.onRateChange = { [weak self] rate in self?.send("rate", ["rate": .number(Double(rate))]) }
        // Observers of `state` see the system's playback from the start: connect right away —
        // here when the daemon runs (a millisecond), off the caller's thread when it has to be
        // started.
        if !shortLived && !connection.connectIfRunning() {
            let connection = self.connection
            PlatformThread.detached(name: "musickit.connect") { connection.ensureConnected() }
        }
    }

    /// The system player's queue. Only its current entry can be read, as on Apple's platforms;
    /// setting it replaces what the system player plays (stopped, ready to play from the new
    /// queue's current entry).
    public var queue: MusicPlayer.Queue {
        get {
            connection.ensureConnected()
            return mirrorQueue
        }
        set {
            let (contents, currentID) = newValue.snapshot
            var args: SystemPlayerWire.Message = ["parts": SystemPlayerWire.parts(of: contents)]
            if let currentID, let index = contents.index(ofEntryID: currentID) { args["start"] = JSONValue(index) }
            send("setQueue", args)
        }
    }

    // MARK: - Transport

    public override var isPreparedToPlay: Bool {
        connection.ensureConnected()
        return mirror.withLock { $0.prepared }
    }

    public override func play() async throws { try await request("play") }
    public override func prepareToPlay() async throws { try await request("prepare") }
    public override func pause() { send("pause") }
    public override func stop() { send("stop") }
    public override func skipToNextEntry() async throws { try await request("next") }
    public override func skipToPreviousEntry() async throws { try await request("previous") }
    public override func restartCurrentEntry() { send("restart") }
    public override func beginSeekingForward() { send("beginSeekingForward") }
    public override func beginSeekingBackward() { send("beginSeekingBackward") }
    public override func endSeeking() { send("endSeeking") }

    /// Seconds into the current entry: the daemon's last word, moved on by the time since at the
    /// playback rate. Setting it seeks.
    public override var playbackTime: TimeInterval {
        get {
            connection.ensureConnected()
            let mirror = mirror.withLock { $0 }
            return max(0, mirror.time + (Date().timeIntervalSince1970 - mirror.at) * mirror.rate)
        }
        // The daemon's player clamps it to the entry; JSON has no infinity, so the largest
        // finite time stands for one. NaN is no time at all.
        set {
            guard !newValue.isNaN else { return }
            send("seek", ["time": .number(min(max(0, newValue), .greatestFiniteMagnitude))])
        }
    }

    /// The system player's volume, 0...1 (Linux addition; see `ApplicationMusicPlayer.volume`):
    /// the daemon's last word. Setting it sends it to the daemon, which every client then sees
    /// (MPRIS `Volume`, MPD's `volume:`), and keeps it.
    public var volume: Double {
        get {
            connection.ensureConnected()
            return mirror.withLock { $0.volume }
        }
        set {
            let clamped = AudioEngine.clampedVolume(newValue)
            mirror.withLock { $0.volume = clamped }
            send("volume", ["volume": .number(clamped)])
        }
    }

    /// The system player's loudness normalization (Linux addition; see
    /// `ApplicationMusicPlayer.loudnessMode`): the daemon's last word; setting it sends it to
    /// the daemon, which keeps it (MPD's clients see it as `replay_gain_mode`).
    public var loudnessMode: ApplicationMusicPlayer.LoudnessMode {
        get {
            connection.ensureConnected()
            return mirror.withLock { $0.loudnessMode }
        }
        set {
            mirror.withLock { $0.loudnessMode = newValue }
            send("loudness", ["mode": .string(newValue.rawValue)])
        }
    }

    // MARK: - The daemon (the CLI's `musickit daemon`, tests)

    /// The daemon's process ID (it is started if none runs).
    package func daemonProcessID() throws -> pid_t {
        let reply = try connection.call("hello", ["subscribe": true])
        return pid_t(reply["result"]?["pid"]?.int ?? 0)
    }

    /// Asks the daemon to save its state and exit; returns when it has exited (its lock is
    /// free), so that the next call starts a new one rather than reaching the old one (5 s at most).
    package func stopDaemon() throws {
        try connection.call("shutdown")
        let lock = open(SystemPlayerWire.lockURL(connection.environment).path, O_RDWR | O_CLOEXEC)
        guard lock >= 0 else { return }
        defer { close(lock) }
        for _ in 0..<500 {
            if flock(lock, LOCK_EX | LOCK_NB) == 0 {
                flock(lock, LOCK_UN)
                return
            }
            usleep(10_000)
        }
    }

    /// Connects now (starting the daemon if none runs), the daemon's state taken; throws when
    /// it cannot be reached.
    package func connect() throws {
        try connection.connect()
    }

    /// Waits until the daemon has taken every request sent so far (they are taken in order),
    /// and the state they made has arrived; throws when the daemon cannot be reached.
    package func synchronize() throws {
        try connection.call("state")
    }

    /// The running daemon's process ID, without starting one (nil when none answers).
    package static func runningDaemonProcessID(_ environment: MusicKitEnvironment = .current) -> pid_t? {
        guard let socket = try? SystemPlayerWire.connect(to: SystemPlayerWire.socketURL(environment).path) else { return nil }
        defer { close(socket) }
        guard (try? SystemPlayerWire.send(["id": 1, "op": "hello"], on: socket)) != nil,
              let reply = try? SystemPlayerWire.receive(on: socket),
              let pid = reply["result"]?["pid"]?.int else { return nil }
        return pid_t(pid)
    }

    /// The daemon's log (its standard error), in the runtime folder.
    /// The daemon's socket, where clients find it (Linux addition).
    package static func socketURL(_ environment: MusicKitEnvironment = .current) -> URL {
        SystemPlayerWire.socketURL(environment)
    }

    package static func daemonLogURL(_ environment: MusicKitEnvironment = .current) -> URL {
        environment.runtimeDirectory.appendingPathComponent("musickitd.log")
    }

    // MARK: - Talking to the daemon

    /// `play()`, `skipToNextEntry()`, `skipToPreviousEntry()` on the calling thread, with no task
    /// in between: for a short-lived process (the CLI), where starting the concurrency runtime's
    /// threads would come before the request.
    package func playNow() throws { try connection.call("play") }
    package func skipToNextEntryNow() throws { try connection.call("next") }
    package func skipToPreviousEntryNow() throws { try connection.call("previous") }

    private func request(_ op: String, _ args: SystemPlayerWire.Message = [:]) async throws {
        try await connection.reply(to: op, args)
    }

    /// Sends without waiting for the answer (it still updates the state when it comes).
    private func send(_ op: String, _ args: SystemPlayerWire.Message = [:]) {
        connection.post(op, args)
    }

    /// The queue's inserts go to the daemon.
    fileprivate func insert(_ contents: QueueContents, position: MusicPlayer.Queue.EntryInsertionPosition) async throws {
        try await request("insert", ["parts": SystemPlayerWire.parts(of: contents),
                                     "position": position == .tail ? "tail" : "next"])
    }

    private func modesChanged() {
        send("modes", ["repeat": .string(SystemPlayerWire.name(of: state.repeatMode ?? .none)),
                       "shuffle": state.shuffleMode == .songs ? "songs" : "off"])
    }

    /// Takes the daemon's state into the observable state and the queue's current entry.
    private func apply(_ object: JSONValue) {
        let rate = object["rate"]?.number ?? 0
        mirror.withLock { mirror in
            mirror.time = object["time"]?.number ?? 0
            mirror.at = object["at"]?.number ?? Date().timeIntervalSince1970
            mirror.rate = rate
            mirror.prepared = object["prepared"]?.bool ?? false
            if let volume = object["volume"]?.number { mirror.volume = volume }
            if let mode = object["loudness"]?.string.flatMap(ApplicationMusicPlayer.LoudnessMode.init(rawValue:)) {
                mirror.loudnessMode = mode
            }
        }
        state.setModesFromElsewhere(repeatMode: SystemPlayerWire.repeatMode(object["repeat"]?.string ?? "none"),
                                    shuffleMode: object["shuffle"]?.string == "songs" ? .songs : .off)
        let variant: AudioVariant? = switch object["variant"]?.string {
        case "lossless": .lossless
        case "lossyStereo": .lossyStereo
        default: nil
        }
        state.setAudioVariant(variant)
        state.setPlaybackStatus(SystemPlayerWire.status(object["status"]?.string ?? "stopped"), rate: Float(rate))
        let entry = object["entry"].flatMap { current -> MusicPlayer.Queue.Entry? in
            guard let id = current["id"]?.string, let resource = SystemPlayerWire.resource(current["resource"]) else { return nil }
            return MusicPlayer.Queue.Entry(resource: resource, startTime: current["start"]?.number,
                                           endTime: current["end"]?.number, id: id)
        }
        mirrorQueue.showCurrent(entry)
    }
}

/// The system player's queue as an app sees it: the current entry only. Inserting sends the
/// items to the daemon.
final class SystemPlayerQueue: MusicPlayer.Queue, @unchecked Sendable {
    // @unchecked: `player` is set once, right after init.
    weak var player: SystemMusicPlayer?

    init() {
        super.init(items: [])
    }

    required init<S: Sequence, PlayableMusicItemType: PlayableMusicItem>(
        for playableItems: S, startingAt startPlayableItem: S.Element? = nil
    ) where S.Element == PlayableMusicItemType {
        super.init(for: playableItems, startingAt: startPlayableItem)
    }

    required init<S: Sequence>(_ entries: S, startingAt startEntry: S.Element? = nil) where S.Element == Entry {
        super.init(entries, startingAt: startEntry)
    }

    required init(album: Album, startingAt startTrack: Track) {
        super.init(album: album, startingAt: startTrack)
    }

    required init(playlist: Playlist, startingAt startPlaylistEntry: Playlist.Entry) {
        super.init(playlist: playlist, startingAt: startPlaylistEntry)
    }

    required convenience init(arrayLiteral elements: any PlayableMusicItem...) {
        self.init(items: elements)
    }

    override init(items: [any PlayableMusicItem], startingAt startIndex: Int? = nil) {
        super.init(items: items, startingAt: startIndex)
    }

    /// Shows `entry` as the current one (what the daemon plays).
    func showCurrent(_ entry: Entry?) {
        guard entry != snapshot.contents.entry(at: 0) || entry?.id != currentEntryID else { return }
        replaceContents(QueueContents(entries: entry.map { [$0] } ?? []))
        setCurrentEntryID(entry?.id)
    }

    override func insert(_ entry: Entry, position: EntryInsertionPosition) async throws {
        try await player?.insert(QueueContents(entries: [entry.owned()]), position: position)
    }

    override func insert<PlayableMusicItemType: PlayableMusicItem>(_ playableItem: PlayableMusicItemType,
                                                                  position: EntryInsertionPosition) async throws {
        try await player?.insert(QueueContents(parts: [QueueContents.part(for: playableItem)]), position: position)
    }

    override func insert<S: Sequence, PlayableMusicItemType: PlayableMusicItem>(
        _ playableItems: S, position: EntryInsertionPosition
    ) async throws where S.Element == PlayableMusicItemType {
        try await player?.insert(QueueContents(parts: playableItems.map { QueueContents.part(for: $0) }), position: position)
    }

    override func insert<S: Sequence>(_ entries: S, position: EntryInsertionPosition) async throws where S.Element == Entry {
        try await player?.insert(QueueContents(entries: entries.map { $0.owned() }), position: position)
    }
}

/// The connection to the daemon: made on first use, the daemon started when none answers;
/// a reader thread takes the answers (matched to the waiting calls) and the state events.
final class SystemPlayerConnection: @unchecked Sendable {
    // @unchecked: mutable state is in `state` (a Mutex); writes are serialized by `writeLock`.
    private let fixedEnvironment: MusicKitEnvironment?
    private let writeLock = NSLock()
    var onState: (@Sendable (JSONValue) -> Void)?

    typealias Message = SystemPlayerWire.Message
    typealias Answer = @Sendable (Result<Message, any Error>) -> Void

    private struct State {
        var descriptor: Int32 = -1
        /// The socket being connected (its subscription not answered yet).
        var connecting: Int32 = -1
        var nextID = 1
        var waiting: [Int: Answer] = [:]
        /// The operation of request 1 when it was sent before this connection existed.
        var sentAtStart: String?
    }
    private let state = Mutex(State())

    /// Whether the connection subscribes to the daemon's changes (with a reader thread that
    /// takes them and the answers); without, each request reads its own answer.
    private let subscribing: Bool

    init(environment: MusicKitEnvironment?, subscribing: Bool = true,
         sentAtStart: (descriptor: Int32, operation: String)? = nil) {
        fixedEnvironment = environment
        self.subscribing = subscribing
        if let sentAtStart {
            precondition(!subscribing, "a request sent at start is answered on the caller's thread")
            state.withLock { state in
                state.descriptor = sentAtStart.descriptor
                state.nextID = 2
                state.sentAtStart = sentAtStart.operation
            }
        }
    }

    var environment: MusicKitEnvironment { fixedEnvironment ?? .current }

    /// Connects (and subscribes to the state) if not connected; a failure is left for the next call.
    func ensureConnected() {
        guard subscribing else { return }
        _ = try? connectedDescriptor()
    }

    /// Connects (starting the daemon if needed) and takes the daemon's state, or throws why not.
    func connect() throws {
        if subscribing { _ = try connectedDescriptor() } else { try call("state") }
    }

    /// Connects if a daemon answers, without starting one; whether connected.
    func connectIfRunning() -> Bool {
        (try? connectedDescriptor(startingDaemon: false)) != nil
    }

    /// Sends `op` and waits for its answer; throws the daemon's error.
    @discardableResult
    func call(_ op: String, _ args: Message = [:]) throws -> Message {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<Message, any Error>?>(nil)
        try send(op, args) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try Self.accepted(outcome.withLock { $0! }.get(), op)
    }

    /// `call` for async callers: the answer is awaited without holding a thread (the reader
    /// thread, or the exchange on this one, resumes it). Connecting, when the connection is not
    /// up yet, still happens on the caller's thread (at most the daemon's start-up wait).
    @discardableResult
    func reply(to op: String, _ args: Message = [:]) async throws -> Message {
        let reply = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Message, any Error>) in
            // `send` either throws or calls its answer once, never both.
            do { try send(op, args) { continuation.resume(with: $0) } } catch { continuation.resume(throwing: error) }
        }
        return try Self.accepted(reply, op)
    }

    /// The reply, when the daemon carried `op` out; its error otherwise.
    private static func accepted(_ reply: Message, _ op: String) throws -> Message {
        if reply["ok"]?.bool != true {
            throw SystemMusicPlayerError(reason: reply["error"]?.string ?? "the system player refused \(op)")
        }
        return reply
    }

    /// Sends `op` without waiting; a failure to reach the daemon is dropped.
    func post(_ op: String, _ args: Message) {
        try? send(op, args) { _ in }
    }

    private func send(_ op: String, _ args: Message, answer: @escaping Answer) throws {
        guard subscribing else { return try exchange(op, args, answer: answer) }
        let descriptor = try connectedDescriptor()
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.waiting[state.nextID] = answer
            return state.nextID
        }
        do {
            try writeLock.withLock { try SystemPlayerWire.send(Self.request(id, op, args), on: descriptor) }
        } catch {
            _ = state.withLock { $0.waiting.removeValue(forKey: id) }
            disconnect(descriptor, error)
            throw error
        }
    }

    /// Held while connecting, so that a second caller waits for the first connection (and its
    /// first state) instead of reading a mirror that is not filled yet.
    private let connectLock = NSLock()

    /// The message asking for `op`, answered under `id`.
    private static func request(_ id: Int, _ op: String, _ args: Message) -> Message {
        ["id": JSONValue(id), "op": .string(op), "args": .object(args)]
    }

    /// A request answered on this thread (a connection that does not subscribe): writes it and
    /// reads until its answer, which brings the daemon's state.
    private func exchange(_ op: String, _ args: Message, answer: Answer) throws {
        let descriptor = try socketDescriptor()
        let (id, alreadySent) = state.withLock { state in
            if state.sentAtStart == op && args.isEmpty {
                state.sentAtStart = nil
                return (1, true)
            }
            defer { state.nextID += 1 }
            return (state.nextID, false)
        }
        let reply: Message
        do {
            reply = try writeLock.withLock {
                if !alreadySent { try SystemPlayerWire.send(Self.request(id, op, args), on: descriptor) }
                while true {
                    guard let message = try SystemPlayerWire.receive(on: descriptor) else {
                        throw SystemMusicPlayerError(reason: "the system player (musickitd) closed the connection")
                    }
                    if message["id"]?.int == id { return message }
                }
            }
        } catch {
            disconnect(descriptor, error)
            throw error
        }
        if let state = reply["state"], state.object != nil { onState?(state) }
        answer(.success(reply))
    }

    /// A connected socket with nothing else done (the daemon started when none listens).
    private func socketDescriptor() throws -> Int32 {
        if let descriptor = state.withLock({ $0.descriptor >= 0 ? $0.descriptor : nil }) { return descriptor }
        let descriptor = try openSocket(startingDaemon: true)
        state.withLock { $0.descriptor = descriptor }
        return descriptor
    }

    private func openSocket(startingDaemon: Bool) throws -> Int32 {
        let environment = self.environment
        let path = SystemPlayerWire.socketURL(environment).path
        if let connected = try? SystemPlayerWire.connect(to: path) { return connected }
        guard startingDaemon else { throw SystemMusicPlayerError(reason: "musickitd does not run") }
        try SystemPlayerDaemon.start(environment)
        return try SystemPlayerDaemon.waitForSocket(path)
    }

    /// The connected socket, the daemon's state taken: connects, starting the daemon when none
    /// listens, and subscribes.
    private func connectedDescriptor(startingDaemon: Bool = true) throws -> Int32 {
        if let descriptor = state.withLock({ $0.descriptor >= 0 ? $0.descriptor : nil }) { return descriptor }
        connectLock.lock()
        defer { connectLock.unlock() }
        if let descriptor = state.withLock({ $0.descriptor >= 0 ? $0.descriptor : nil }) { return descriptor }
        let descriptor = try openSocket(startingDaemon: startingDaemon)
        // Subscribe, and take the state once, before anyone reads the mirror.
        let done = DispatchSemaphore(value: 0)
        let subscribed = Mutex<Result<Message, any Error>?>(nil)
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.connecting = descriptor
            state.waiting[state.nextID] = { result in
                subscribed.withLock { $0 = result }
                done.signal()
            }
            return state.nextID
        }
        PlatformThread.detached(name: "musickit.system-player") { [weak self] in self?.read(descriptor) }
        do {
            try writeLock.withLock {
                try SystemPlayerWire.send(Self.request(id, "hello", ["subscribe": true]), on: descriptor)
            }
        } catch {
            shutdown(descriptor, Int32(SHUT_RDWR))
            throw error
        }
        done.wait()
        if case .failure(let error) = subscribed.withLock({ $0! }) { throw error }
        state.withLock { state in
            state.connecting = -1
            state.descriptor = descriptor
        }
        return descriptor
    }

    private func read(_ descriptor: Int32) {
        while true {
            do {
                guard let message = try SystemPlayerWire.receive(on: descriptor) else {
                    throw SystemMusicPlayerError(reason: "the system player (musickitd) closed the connection")
                }
                if let state = message["state"], state.object != nil { onState?(state) }
                if let id = message["id"]?.int, let answer = state.withLock({ $0.waiting.removeValue(forKey: id) }) {
                    answer(.success(message))
                }
            } catch {
                disconnect(descriptor, error)
                return
            }
        }
    }

    /// Forgets the connection; the calls waiting get `error`; the next call connects again.
    private func disconnect(_ descriptor: Int32, _ error: any Error) {
        let waiting = state.withLock { state -> [Answer] in
            guard state.descriptor == descriptor || state.connecting == descriptor else { return [] }
            state.descriptor = -1
            state.connecting = -1
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        shutdown(descriptor, Int32(SHUT_RDWR))
        for answer in waiting { answer(.failure(error)) }
    }
}

/// Why the system player could not do what was asked (Linux addition: Apple's reports its
/// own errors).
public struct SystemMusicPlayerError: Error, CustomStringConvertible, LocalizedError, Sendable {
    public let reason: String
    public var description: String { reason }
    public var errorDescription: String? { reason }
}

/// Starting the daemon.
enum SystemPlayerDaemon {
    /// The daemon's executable: `MUSICKITD` when set, else `musickitd` beside this process's
    /// executable (a build folder, an install's bin), else on `PATH`.
    static func executable() -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["MUSICKITD"], !path.isEmpty { return path }
        let beside = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("musickitd").path
        if access(beside, X_OK) == 0 { return beside }
        for directory in (environment["PATH"] ?? "/usr/local/bin:/usr/bin").split(separator: ":") {
            let candidate = "\(directory)/musickitd"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Starts `musickitd` in its own session, for `environment`'s folders, its output in
    /// `musickitd.log` in the runtime folder.
    static func start(_ environment: MusicKitEnvironment) throws {
        guard let executable = executable() else {
            throw SystemMusicPlayerError(reason: "the system player's daemon (musickitd) was not found beside this program "
                                         + "or on PATH; set MUSICKITD to its path")
        }
        try PrivateFiles.ensureDirectory(environment.runtimeDirectory)
        var variables = ProcessInfo.processInfo.environment
        variables["MUSICKIT_CONFIG_DIR"] = environment.configDirectory.path
        variables["MUSICKIT_DATA_DIR"] = environment.dataDirectory.path
        variables["MUSICKIT_RUNTIME_DIR"] = environment.runtimeDirectory.path
        if let assets = environment.assetsDirectory { variables["MUSICKIT_ASSETS"] = assets.path }
        let log = SystemMusicPlayer.daemonLogURL(environment).path
        let pid: pid_t
        switch spawnProcess([executable], environment: variables, outputPath: log, newSession: true) {
        case .success(let started): pid = started
        case .failure(let error): throw SystemMusicPlayerError(reason: "could not start \(executable): \(error)")
        }
        // Reap it if it exits at once (another daemon won the lock); it is not our child to wait for otherwise.
        let child = pid
        PlatformThread.detached(name: "musickit.reaper") { var code: Int32 = 0; waitpid(child, &code, 0) }
    }

    /// Connects once the daemon listens (up to 5 s).
    static func waitForSocket(_ path: String) throws -> Int32 {
        let deadline = Date().addingTimeInterval(5)
        var lastError: any Error = SystemMusicPlayerError(reason: "no answer")
        while Date() < deadline {
            do { return try SystemPlayerWire.connect(to: path) } catch { lastError = error }
            usleep(5_000)
        }
        throw SystemMusicPlayerError(reason: "the system player (musickitd) did not start listening on \(path): \(lastError)")
    }
}
