import AudioEngine
import PlatformSupport
import Foundation
import Glibc
import MusicKitCore
import Synchronization

/// The system player's daemon (`musickitd`): one `ApplicationMusicPlayer` that every process of
/// the user controls through a Unix socket in the runtime directory, that keeps playing when they
/// are gone, and that keeps its queue, current entry, position and modes in a state file so that
/// `play` resumes where it stopped after a restart.
///
/// One per runtime directory: it holds an exclusive lock on `musickitd.lock` while it runs (a
/// second one exits at once). The socket is 0600 in a 0700 folder, and a peer whose uid is not
/// the daemon's is refused (`SO_PEERCRED`). Each connection is served on its own thread; a peer
/// that sends something that is not a message of this protocol gets an error and is dropped,
/// while playback goes on. The same player is offered to MPD's clients (`MPDProtocolServer`, on
/// `mpd.sock`) and to the desktop (`MPRISServer`, on the session bus); every change, whoever
/// made it, goes through `changed`, which tells all three and saves the state.
package final class SystemPlayerServer: @unchecked Sendable {
    // @unchecked: mutable state is in `clients` (a Mutex); the player is thread-safe.
    private let environment: MusicKitEnvironment
    private let player: ApplicationMusicPlayer
    private let stateURL: URL
    private let clients = Mutex<[UInt64: Client]>([:])
    private let nextClientID = Atomic<UInt64>(1)
    /// Trying to play again after the device failed (`resumeWhenTheDeviceIsBack`).
    private let resuming = Atomic<Bool>(false)
    private let persistQueue = DispatchQueue(label: "musickitd.persist")
    /// A state write is scheduled and has not taken its snapshot yet (`persist`).
    private let writePending = Atomic<Bool>(false)
    /// Changes are saved at most this often: the state file is rewritten whole (atomically), and
    /// 3,000 `add`s one by one wrote 2.56 GB (issue #42). A change is on disk within this time.
    static let stateWriteInterval: DispatchTimeInterval = .milliseconds(250)
    /// Every change to the player, from any client (this protocol's, MPD's, MPRIS's) and the
    /// daemon's own preparing, runs here, one at a time: the player's transport is not made for
    /// two callers at once (a prepare racing a play). A start stuck opening is superseded by the
    /// next request (see `DaemonOperations`).
    private let operations: DaemonOperations
    private var listener: Int32 = -1
    /// Whether the sockets came from systemd (socket activation): they are left in place at exit.
    private var socketsAreSystemd = false
    private var lockDescriptor: Int32 = -1
    /// Saves the position every few seconds while playing; suspended otherwise (`updatePositionTimer`).
    private let positionTimer = Mutex<(timer: DispatchSourceTimer?, running: Bool)>((nil, false))
    /// MPD's protocol on `mpd.sock` beside the socket.
    private var mpd: MPDProtocolServer?
    /// MPRIS on the session bus, when there is one.
    private var mpris: MPRISServer?

    /// One connected peer.
    private final class Client: @unchecked Sendable {
        // @unchecked: writes and `ended` are serialized by `writeLock`; `subscribed` is set once,
        // before events.
        let descriptor: Int32
        let writeLock = NSLock()
        var subscribed = false
        /// Served to the end: the descriptor is about to be closed (and its number reused), so a
        /// broadcast that picked this client up just before must not write to it.
        private var ended = false

        init(descriptor: Int32) { self.descriptor = descriptor }

        /// Sends without waiting; when the peer is gone, does nothing (its thread notices and
        /// closes). A peer that stopped reading — its socket's kernel buffer, its outbox, is full
        /// (~200 KiB on a Unix socket: a suspended app subscribed to events) — is dropped: every
        /// send happens under `stateMessages`, and one blocked send froze every client (issue #42).
        func send(_ message: SystemPlayerWire.Message) {
            writeLock.withLock {
                guard !ended, let frame = try? SystemPlayerWire.frame(message) else { return }
                let sent = frame.withUnsafeBytes { SystemPlayerWire.sendWithoutWaiting($0, on: descriptor) }
                if !sent {
                    ended = true
                    // Its thread, waiting for its next request, sees the end and closes.
                    Glibc.shutdown(descriptor, Int32(SHUT_RDWR))
                }
            }
        }

        /// No more sends: called before the descriptor is closed.
        func end() { writeLock.withLock { ended = true } }
    }

    /// MPD's protocol on 127.0.0.1 at this port as well (nil: only on `mpd.sock`).
    private let mpdPort: UInt16?

    /// What ends the process once the server has stopped (musickitd's `exit(0)`): the library
    /// does not end a process itself.
    private let stopped: @Sendable () -> Never

    /// `mpdPort`: also serve MPD's protocol on 127.0.0.1 at that port (6600 is MPD's); off by
    /// default, since any local user can connect there. `stopped` is called once the state is
    /// saved and the sockets removed, after SIGTERM/SIGINT or a `shutdown` request, on the
    /// thread that stopped it.
    package init(environment: MusicKitEnvironment = .current, mpdPort: UInt16? = nil,
                 stopped: @escaping @Sendable () -> Never) {
        self.environment = environment
        self.mpdPort = mpdPort
        self.stopped = stopped
        player = ApplicationMusicPlayer(engineConfiguration: ApplicationMusicPlayer.defaultEngineConfiguration)
        stateURL = environment.dataDirectory.appendingPathComponent("system-player.json")
        operations = DaemonOperations(player: player, log: Self.log)
    }

    /// Takes the lock and the socket, restores the saved state and serves until SIGTERM/SIGINT
    /// or a `shutdown` request. Returns false (at once) when another daemon holds the lock.
    package func run() throws -> Bool {
        try PrivateFiles.ensureDirectory(environment.runtimeDirectory)
        lockDescriptor = open(SystemPlayerWire.lockURL(environment).path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockDescriptor >= 0 else { throw SystemPlayerWireError(description: "lock: \(String(cString: strerror(errno)))") }
        guard flock(lockDescriptor, LOCK_EX | LOCK_NB) == 0 else { return false }
        let path = SystemPlayerWire.socketURL(environment).path
        let mpdPath = SystemPlayerWire.mpdSocketURL(environment).path
        // Sockets systemd listens on (Assets/systemd/musickitd.socket) are taken as they are;
        // otherwise made here, replacing one left by a daemon that died (the lock says none runs).
        let activated = SystemPlayerWire.activatedListeners()
        socketsAreSystemd = activated[path] != nil
        listener = try activated[path] ?? SystemPlayerWire.listen(at: path)
        restore()
        prepareSoon()
        player.listeners.add { [weak self] event in self?.playerEvent(event) }
        let mpd = MPDProtocolServer(player: player, operations: operations) { [weak self] in self?.changed(subsystems: []) }
        if let descriptor = activated[mpdPath] {
            mpd.listen(descriptor: descriptor)
        } else {
            try mpd.listen(path: mpdPath)
        }
        if let mpdPort {
            do {
                try mpd.listen(loopbackPort: mpdPort)
                log("MPD's protocol also on 127.0.0.1:\(mpdPort)")
            } catch {
                log("MPD's protocol not on TCP: \(error)")
            }
        }
        self.mpd = mpd
        let mpris = MPRISServer(player: player, operations: operations,
                                changed: { [weak self] subsystems in self?.changed(subsystems: subsystems) },
                                quit: { [weak self] in self?.shutdown() },
                                log: { [weak self] text in self?.log(text) })
        self.mpris = mpris
        mpris.start()
        startPositionTimer()
        installSignalHandlers()
        log("musickitd \(getpid()) serving \(path) (audio device: \(player.engineConfiguration.deviceName))")
        // Serves until shutdown, which exits; returns if the listener is closed.
        ConnectionAcceptors(listener: listener, name: "musickitd.client", admit: { [weak self] descriptor in
            guard SystemPlayerWire.peerIsThisUser(descriptor) else {
                self?.log("refused a connection from another user")
                return false
            }
            return true
        }, serve: { [weak self] descriptor in
            self?.serve(Client(descriptor: descriptor))
        }, failed: { [weak self] error in
            self?.log("accept: \(String(cString: strerror(error)))")
        }).acceptOnThisThread()
        return true
    }

    private func log(_ text: String) { Self.log(text) }

    @Sendable private static func log(_ text: String) {
        FileHandle.standardError.write(Data("\(ISO8601DateFormatter().string(from: Date())) \(text)\n".utf8))
    }

    // MARK: - Requests

    /// Serves one peer until it leaves (or is dropped); it gets the state changes it subscribes to
    /// meanwhile.
    private func serve(_ client: Client) {
        let id = nextClientID.add(1, ordering: .relaxed).oldValue
        clients.withLock { $0[id] = client }
        defer {
            clients.withLock { _ = $0.removeValue(forKey: id) }
            client.end()
        }
        while true {
            let message: SystemPlayerWire.Message
            do {
                guard let received = try SystemPlayerWire.receive(on: client.descriptor) else { return }
                message = received
            } catch {
                // Not a message of this protocol: say so (if the peer still listens) and drop it.
                client.send(["ok": false, "error": .string("\(error)")])
                return
            }
            let id = message["id"]?.int ?? 0
            let op = message["op"]?.string ?? ""
            do {
                // Reading the state needs no turn, and pausing and stopping take none (they never
                // wait for another client's play whose first entry is still opening); everything
                // else waits for its turn.
                let immediate = ["hello", "state", "pause", "stop"].contains(op)
                let effect: DaemonOperations.Effect = ["play", "setQueue", "shutdown"].contains(op) ? .startsOrStops : .keepsPlaying
                let result = immediate ? try handle(message, from: client)
                    : try operations.perform("the request \(op)", effect) { try self.handle(message, from: client) } ?? nil
                stateMessages.withLock {
                    var reply: SystemPlayerWire.Message = ["id": JSONValue(id), "ok": true, "state": snapshot()]
                    if let result { reply["result"] = result }
                    client.send(reply)
                }
            } catch {
                stateMessages.withLock {
                    client.send(["id": JSONValue(id), "ok": false, "error": .string("\(error)"), "state": snapshot()])
                }
            }
            if op == "shutdown" { shutdown() }
        }
    }

    /// Carries out one request; returns a result for the ones that have one.
    private func handle(_ message: SystemPlayerWire.Message, from client: Client) throws -> JSONValue? {
        guard let op = message["op"]?.string else { throw SystemPlayerWireError(description: "a request without \"op\"") }
        let args = message["args"]?.object ?? [:]
        defer {
            if op != "hello" && op != "state" {
                changed(subsystems: op == "setQueue" || op == "insert" ? ["playlist", "player"] : op == "modes" || op == "loudness" ? ["options"] : op == "volume" ? ["mixer"] : ["player"])
            }
        }
        switch op {
        case "hello":
            client.subscribed = args["subscribe"]?.bool ?? false
            return ["pid": JSONValue(Int(getpid())), "version": JSONValue(SystemPlayerWire.version)]
        case "state", "shutdown":
            break
        case "setQueue":
            let contents = try SystemPlayerWire.contents(from: args["parts"])
            let queue = ApplicationMusicPlayer.Queue(items: [])
            queue.replaceContents(contents)
            if let start = args["start"]?.int, let entry = contents.entry(at: start) { queue.setCurrentEntryID(entry.id) }
            player.queue = queue
            prepareSoon()
        case "insert":
            let contents = try SystemPlayerWire.contents(from: args["parts"])
            let entries = contents.entries(in: 0..<contents.count)
            let position: MusicPlayer.Queue.EntryInsertionPosition = args["position"]?.string == "tail" ? .tail : .afterCurrentEntry
            try waitFor { [player] in try await player.queue.insert(entries, position: position) }
        case "play": try waitFor { [player] in try await player.play() }
        case "prepare": try waitFor { [player] in try await player.prepareToPlay() }
        case "pause": player.pause()
        case "stop":
            player.stop()
            prepareSoon()
        case "next": player.skipToNextEntryBlocking()
        case "previous": try waitFor { [player] in try await player.skipToPreviousEntry() }
        case "restart": player.restartCurrentEntry()
        case "seek":
            guard let time = args["time"]?.number else { throw SystemPlayerWireError(description: "seek without a time") }
            player.playbackTime = time
        case "beginSeekingForward": player.beginSeekingForward()
        case "beginSeekingBackward": player.beginSeekingBackward()
        case "endSeeking": player.endSeeking()
        case "rate":
            player.state.playbackRate = Float(args["rate"]?.number ?? 1)
        case "loudness":
            guard let mode = args["mode"]?.string.flatMap(ApplicationMusicPlayer.LoudnessMode.init(rawValue:)) else {
                throw SystemPlayerWireError(description: "loudness takes a mode: off, track, album or auto")
            }
            player.loudnessMode = mode
        case "volume":
            guard let volume = args["volume"]?.number, !volume.isNaN else {
                throw SystemPlayerWireError(description: "volume without a number from 0 to 1")
            }
            player.volume = volume
        case "modes":
            if let mode = args["repeat"]?.string { player.state.repeatMode = SystemPlayerWire.repeatMode(mode) }
            if let mode = args["shuffle"]?.string { player.state.shuffleMode = mode == "songs" ? .songs : .off }
        default:
            throw SystemPlayerWireError(description: "unknown request \"\(op)\"")
        }
        return nil
    }

    /// Keeps the current entry prepared while stopped: its first frames decoded and the device
    /// open but silent, so that the next `play` (from any client: SystemMusicPlayer, musickit,
    /// mpc) only starts the stream.
    private func prepareSoon() {
        operations.async { [weak self, player] in
            // Stopped, or paused without a stream (after a song, MPD's `single`).
            let status = player.state.playbackStatus
            guard status == .stopped || status == .paused, !player.isPreparedToPlay else { return }
            do {
                try waitFor { try await player.prepareToPlay() }
            } catch let error as MusicPlayer.PlaybackError where error == .emptyQueue {
                // Nothing to prepare.
            } catch {
                self?.log("could not prepare the current entry (play will try again): \(error)")
            }
        }
    }

    // MARK: - State

    /// What every client sees: the status, modes, the current entry and the position.
    private func snapshot() -> JSONValue {
        let state = player.state
        var object: SystemPlayerWire.Message = [
            "status": .string(SystemPlayerWire.name(of: state.playbackStatus)),
            "rate": .number(Double(state.playbackRate)),
            "repeat": .string(SystemPlayerWire.name(of: state.repeatMode ?? .none)),
            "shuffle": state.shuffleMode == .songs ? "songs" : "off",
            "time": .number(player.playbackTime),
            "volume": .number(player.volume),
            "loudness": .string(player.loudnessMode.rawValue),
            "at": .number(Date().timeIntervalSince1970),
            "count": JSONValue(player.queue.snapshot.contents.count),
            "prepared": .bool(player.isPreparedToPlay),
        ]
        if let entry = player.queue.currentEntry {
            var current: SystemPlayerWire.Message = ["id": .string(entry.id), "resource": entry.resource.jsonValue]
            if let start = entry.startTime { current["start"] = .number(start) }
            if let end = entry.endTime { current["end"] = .number(end) }
            object["entry"] = .object(current)
        }
        if let variant = state.audioVariant { object["variant"] = variant == .lossless ? "lossless" : "lossyStereo" }
        return .object(object)
    }

    /// Tells the subscribed clients (and MPD's idle clients, for `subsystems`) and saves the state.
    /// Held from taking a snapshot of the state to sending it: messages that carry the state
    /// (events, answers) leave in the order their snapshots were taken. Without it, an event's
    /// older snapshot (an entry that started) could be sent after a newer one (a pause made
    /// meanwhile by another app), and the apps would show the older state until the next change.
    private let stateMessages = NSLock()

    private func changed(event: String? = nil, detail: String? = nil, subsystems: Set<String> = ["player"]) {
        stateMessages.withLock {
            var message: SystemPlayerWire.Message = ["event": .string(event ?? "state"), "state": snapshot()]
            if let detail { message["detail"] = .string(detail) }
            for client in clients.withLock({ Array($0.values) }) where client.subscribed { client.send(message) }
        }
        if !subsystems.isEmpty { mpd?.notify(subsystems) }
        mpris?.notify()
        persist()
        updatePositionTimer()
    }

    private func playerEvent(_ event: ApplicationMusicPlayer.Event) {
        switch event {
        case .entryStarted: changed()
        case .entryFailed(let entry, let reason):
            log("skipped \(entry?.title ?? "an entry"): \(reason)")
            changed(event: "entryFailed", detail: "\(entry?.title ?? "an entry"): \(reason)")
        case .queueFinished:
            changed(event: "queueFinished")
            prepareSoon()
        case .interrupted(let reason):
            log("the audio device failed: \(reason)")
            changed(event: "interrupted", detail: reason)
            if !resuming.exchange(true, ordering: .relaxed) { resumeWhenTheDeviceIsBack(attempt: 1) }
        case .historyNotRecorded(_, let reason): log(reason)
        case .volumeChanged: changed(subsystems: ["mixer"])
        }
    }

    /// After the audio device failed: plays again where it was heard as soon as the device is
    /// back (a restarted sound server, a reconnected headset), trying every 0.25–2 s, until it
    /// plays or a client decided otherwise (pause, stop, play, a new queue: no longer interrupted).
    private func resumeWhenTheDeviceIsBack(attempt: Int) {
        operations.async(after: Double(min(250 * attempt, 2_000)) / 1_000) { [weak self] in
            guard let self else { return }
            guard player.state.playbackStatus == .interrupted else {
                resuming.store(false, ordering: .relaxed)
                return
            }
            do {
                try waitFor { [player] in try await player.play() }
                resuming.store(false, ordering: .relaxed)
                log("the audio device is back: playing again")
                changed(event: "resumed")
            } catch {
                if attempt == 1 || attempt % 30 == 0 { log("the audio device is still unavailable: \(error)") }
                resumeWhenTheDeviceIsBack(attempt: attempt + 1)
            }
        }
    }

    private func startPositionTimer() {
        // The position is saved every few seconds while playing, so a daemon killed outright
        // resumes close to where it was.
        let timer = DispatchSource.makeTimerSource(queue: persistQueue)
        timer.schedule(deadline: .now() + 5, repeating: 5)
        timer.setEventHandler { [weak self] in
            guard let self, player.state.playbackStatus == .playing else { return }
            writeState()
        }
        positionTimer.withLock { $0 = (timer, false) }
        updatePositionTimer()
    }

    deinit {
        positionTimer.withLock { state in
            guard let timer = state.timer else { return }
            if !state.running { timer.resume() }  // libdispatch: a suspended source may not be released
            timer.cancel()
        }
    }

    /// Runs the position timer only while playing: a paused or stopped daemon does not wake for
    /// it (issue #41: idle is idle). Called with every change of state (`changed`).
    private func updatePositionTimer() {
        let playing = player.state.playbackStatus == .playing
        positionTimer.withLock { state in
            guard let timer = state.timer, state.running != playing else { return }
            if playing { timer.resume() } else { timer.suspend() }
            state.running = playing
        }
    }

    /// Saves the state soon: changes in one `stateWriteInterval` share one write.
    private func persist() {
        guard !writePending.exchange(true, ordering: .acquiringAndReleasing) else { return }
        persistQueue.asyncAfter(deadline: .now() + Self.stateWriteInterval) { [weak self] in
            guard let self else { return }
            // Cleared before the snapshot: a change made while writing schedules the next write.
            writePending.store(false, ordering: .releasing)
            writeState()
        }
    }

    /// Writes the queue, the current entry, the position and the modes (atomically).
    private func writeState() {
        let (contents, currentID) = player.queue.snapshot
        var object: SystemPlayerWire.Message = [
            "version": 1,
            "parts": SystemPlayerWire.parts(of: contents),
            "time": .number(player.playbackTime),
            "repeat": .string(SystemPlayerWire.name(of: player.state.repeatMode ?? .none)),
            "shuffle": player.state.shuffleMode == .songs ? "songs" : "off",
            "pausesAfterEachEntry": .bool(player.pausesAfterEachEntry),
            "volume": .number(player.volume),
        ]
        // Only a mode set through the daemon (MPD's replay_gain_mode); else it follows the account.
        if let mode = player.loudnessModeSetHere { object["loudness"] = .string(mode.rawValue) }
        if let currentID, let index = contents.index(ofEntryID: currentID) { object["current"] = JSONValue(index) }
        do {
            let data = Data(JSONValue.object(object).serialized.utf8)
            try PrivateFiles.ensureDirectory(stateURL.deletingLastPathComponent())
            try PrivateFiles.writeAtomically(data, to: stateURL)
        } catch {
            log("could not save the player's state in \(stateURL.path): \(error)")
        }
    }

    /// Puts back the saved queue, current entry, position and modes (stopped: `play` resumes).
    private func restore() {
        guard let data = try? Data(contentsOf: stateURL) else { return }
        do {
            guard let object = try JSONValue.parse(data).object, let parts = object["parts"], parts.array != nil else {
                throw SystemPlayerWireError(description: "not a state file")
            }
            let contents = try SystemPlayerWire.contents(from: parts)
            let queue = ApplicationMusicPlayer.Queue(items: [])
            queue.replaceContents(contents)
            if let index = object["current"]?.int, let entry = contents.entry(at: index) { queue.setCurrentEntryID(entry.id) }
            player.queue = queue
            if let mode = object["repeat"]?.string { player.state.repeatMode = SystemPlayerWire.repeatMode(mode) }
            if let mode = object["shuffle"]?.string { player.state.shuffleMode = mode == "songs" ? .songs : .off }
            if let pauses = object["pausesAfterEachEntry"]?.bool { player.pausesAfterEachEntry = pauses }
            // Only a volume someone turned down: at 1 the server's own stays (a desktop may have
            // restored the person's setting for the application).
            if let volume = object["volume"]?.number, volume < 1 { player.volume = volume }
            if let mode = object["loudness"]?.string.flatMap(ApplicationMusicPlayer.LoudnessMode.init(rawValue:)) {
                player.loudnessMode = mode
            }
            if let time = object["time"]?.number, time > 0 { player.playbackTime = time }
            log("restored \(contents.count) entries from \(stateURL.path)")
        } catch {
            log("could not restore the player's state from \(stateURL.path): \(error); starting empty")
        }
    }

    // MARK: - Ending

    private func installSignalHandlers() {
        for signal in [SIGTERM, SIGINT] {
            Glibc.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler { [weak self] in self?.shutdown() }
            source.resume()
            signalSources.append(source)
        }
    }
    private var signalSources: [DispatchSourceSignal] = []

    /// Saves the state, stops playing, removes the socket and calls `stopped`.
    private func shutdown() {
        persistQueue.sync { writeState() }
        player.stop()
        if !socketsAreSystemd {
            // systemd's stay: the next client's connection starts the daemon again.
            unlink(SystemPlayerWire.socketURL(environment).path)
            unlink(SystemPlayerWire.mpdSocketURL(environment).path)
        }
        log("musickitd \(getpid()) stopped")
        stopped()
    }
}

/// A URI that names nothing playable.
/// Why a URI names nothing a client may queue, in the kinds MPD tells apart.
struct SystemPlayerURIError: Error, CustomStringConvertible {
    enum Kind {
        /// Outside what this client may read (a TCP client and a file outside the library's
        /// folders): MPD's `ACK [4] Access denied`, whether or not the file exists.
        case denied
        /// No such file: MPD's `ACK [52] Failed to access …`.
        case missing
        /// Not a regular audio file (a directory, a device, a pipe, text, unreadable) or no such
        /// song ID: MPD's `ACK [50] No such song`.
        case noSuchSong
    }

    let kind: Kind
    let description: String
}

/// A playable item handed out of an async closure.
struct PlayResolutionItem: @unchecked Sendable {
    // @unchecked: every PlayableMusicItem of this framework is a Sendable value type.
    let item: any PlayableMusicItem
}

extension SystemPlayerServer {
    /// What a URI that a client (MPD's `add`, MPRIS's `OpenUri`) names: a file (an absolute path
    /// or `file://`) that is a regular file an audio decoder opens, or `musickit:ID` (a catalog
    /// or library song). With `folders` (a client another user may be behind: the TCP port),
    /// only files whose real path (symbolic links resolved) is inside one of them: MPD's rule,
    /// so that such a client cannot learn which of the owner's files exist. Blocking (a file
    /// open, a catalog lookup): call it outside the daemon's operations queue.
    static func item(forURI uri: String, within folders: [URL]? = nil) throws(SystemPlayerURIError) -> PlayResolutionItem {
        if uri.hasPrefix("musickit:") {
            let id = String(uri.dropFirst("musickit:".count))
            let found: PlayResolutionItem?
            do {
                found = try waitFor { () -> PlayResolutionItem? in
                    if let song = try await MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: MusicItemID(id)).response().items.first {
                        return PlayResolutionItem(item: song)
                    }
                    var library = MusicLibraryRequest<Song>()
                    library.filter(matching: \.id, equalTo: MusicItemID(id))
                    return try await library.response().items.first.map { PlayResolutionItem(item: $0) }
                }
            } catch {
                throw SystemPlayerURIError(kind: .noSuchSong, description: "could not look up \(id): \(error)")
            }
            guard let found else { throw SystemPlayerURIError(kind: .noSuchSong, description: "No such song: \(id)") }
            return found
        }
        let path = uri.hasPrefix("file://") ? URL(string: uri)?.path ?? uri : uri
        guard path.hasPrefix("/") else {
            throw SystemPlayerURIError(kind: .noSuchSong, description: "No such song: \(uri) (give an absolute path, file://… or musickit:ID)")
        }
        if let folders {
            let roots = folders.compactMap { realPath($0.path) }
            guard let real = realPath(path), roots.contains(where: { real == $0 || real.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }) else {
                throw SystemPlayerURIError(kind: .denied, description: "Access denied: \(uri) is not in the library's folders")
            }
        }
        let decoder: AudioFileDecoder
        do {
            decoder = try AudioFileDecoder(path: Song.standardizedPath(path))
        } catch {
            if case .missing = error.reason {
                throw SystemPlayerURIError(kind: .missing, description: "Failed to access \(path): No such file or directory")
            }
            throw SystemPlayerURIError(kind: .noSuchSong, description: "No such song: \(error)")
        }
        decoder.keepForReuse()  // Song(filePath:) takes it
        return PlayResolutionItem(item: Song(filePath: path))
    }

    /// `path` with symbolic links, "." and ".." resolved; nil when it does not exist.
    private static func realPath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
