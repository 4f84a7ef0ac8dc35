import PlatformSupport
import AudioEngine
import CEarlyRequest
import Foundation
import MusicKitCore
import MusicKitTerminal
import Synchronization

/// `musickit play`: files, catalog and library items or a search term, through
/// `ApplicationMusicPlayer`, with a full-screen view (or a live status line) and keys.
enum PlayCommand {
    static let spec = ArgumentSpec(
        options: [.init(name: "--device", valueName: "NAME",
                        help: "ALSA device (`aplay -L`), pulseaudio[:SINK], or snapcast:FIFO[?rate=HZ&buffer=MS] "
                            + "(Snapcast's pipe source) (default: $MUSICKIT_AUDIO_DEVICE, else "
                            + "pulseaudio when a PulseAudio or PipeWire server is there, falling back to ALSA's default)"),
                  .init(name: "--repeat", valueName: "none|one|all", help: "repeat mode to start with (default none)"),
                  .init(name: "--crossfade", valueName: "SECONDS", help: "overlap entries by 1-12 s, fading (default: gapless)")],
        flags: [.init(name: "--shuffle", help: "shuffle the songs"),
                .init(name: "--system", help: "hand the queue to the system player (musickitd) and return; it plays on"),
                .init(name: "--no-ui", help: "no keys and no live status line; one line per event (for scripts)")],
        positionalName: "FILE|FOLDER|ID|TERM...", minimumPositionals: 1)

    static let help = """
    usage: musickit play [--device NAME] [--repeat none|one|all] [--shuffle] [--crossfade SECONDS] [--no-ui]
                         [--system] FILE|FOLDER|ID|TERM...

    Plays through ApplicationMusicPlayer, one entry after the other without a gap: audio
    files (WAV, FLAC, Ogg Vorbis, Opus, MP3, M4A with AAC or ALAC, ...), folders (their audio
    files, in path order), catalog songs, albums and playlists by ID, library items by ID (i.…,
    l.…, p.…), or a search term (`musickit play gapless demo`): the library's album or songs
    that match it first, else the catalog's best match. On a terminal it shows what plays full
    screen (a status line when TERM=dumb; no colours with NO_COLOR). Albums and playlists
    load their tracks as they are reached. An entry that cannot be played is skipped with
    the reason. Catalog content needs the account's subscription; the first time, musickit
    asks for access to Apple Music (`musickit authorize musickit --allow` answers ahead, for
    scripts). With --system the queue goes to the system player (the daemon musickitd,
    started if none runs), which plays on after this command returns; `musickit
    status|pause|next|previous|seek|volume|stop` control it.

    options:
    \(spec.optionsHelp())

    keys: space pause/play, n next, p previous (or restart after 3 s), ←/→ seek 10 s,
          f/b seek forward/backward at 4× until the next key, r repeat (none, all, one),
          s shuffle, +/- volume (5 % steps), q quit
    signals: SIGINT/SIGTERM stop, SIGUSR1 next, SIGUSR2 pause/play

    exit codes:
    \(ExitCode.helpText)
    """

    /// Hands the engine the connection to the sound server that the process began at start, if
    /// it began one (Sources/CEarlyRequest/EarlyLoad.c): its first PulseAudio stream is made on it.
    static func adoptEarlyConnection() {
        AudioEngine.adoptPulseAudioConnection {
            var mainloop: UnsafeMutableRawPointer?
            var context: UnsafeMutableRawPointer?
            guard musickit_early_pulse_connection_take(&mainloop, &context) != 0, let mainloop, let context else { return nil }
            return (OpaquePointer(mainloop), OpaquePointer(context))
        }
    }

    /// Runs `job` on the thread that began the connection at process start, once it has begun
    /// it (Sources/CEarlyRequest/EarlyLoad.c): while libpulse loads there, a thread made here
    /// would wait for the loader. False when that thread is not there or no longer takes one.
    @Sendable static func runOnEarlyThread(_ job: @escaping @Sendable () -> Void) -> Bool {
        final class Job: Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let context = Unmanaged.passRetained(Job(job)).toOpaque()
        let taken = musickit_early_thread_run({ context in
            Unmanaged<Job>.fromOpaque(context!).takeRetainedValue().body()
        }, context) != 0
        if !taken { Unmanaged<Job>.fromOpaque(context).release() }
        return taken
    }

    static func run(_ arguments: [String]) -> ExitCode {
        SignalHandlers.noteUntilHandled([SIGUSR1, SIGUSR2])
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
        } catch {
            Console.error("musickit play: \(errorMessage(error))\n\n\(help)\n")
            return .usage
        }
        let repeatMode: MusicPlayer.RepeatMode
        switch parsed.option("--repeat") ?? "none" {
        case "none": repeatMode = .none
        case "one": repeatMode = .one
        case "all": repeatMode = .all
        case let other:
            Console.error("musickit play: --repeat takes none, one or all, not \"\(other)\"\n\n\(help)\n")
            return .usage
        }
        var transition = MusicPlayer.Transition.none
        if let text = parsed.option("--crossfade") {
            guard let seconds = Double(text), seconds >= 1, seconds <= 12 else {
                Console.error("musickit play: --crossfade takes seconds from 1 to 12, not \"\(text)\"\n\n\(help)\n")
                return .usage
            }
            transition = .crossfade(duration: seconds)
        }
        var engineConfiguration = ApplicationMusicPlayer.defaultEngineConfiguration
        if let device = parsed.option("--device") {
            engineConfiguration.deviceName = device
            engineConfiguration.fallbackDeviceName = nil  // the device asked for, or its error
        }
        let files = parsed.positionals.filter(PlayResolution.isFile)
        adoptEarlyConnection()
        // The device opens (~4 ms through a sound server) while the rest gets ready.
        if !parsed.has("--system") {
            AudioEngine.warmUpDevice(engineConfiguration, forFileAt: files.first, on: runOnEarlyThread)
        }
        // Anything but files is catalog or library content: the app needs access.
        if files.count < parsed.positionals.count, let refused = requireAuthorization("play") {
            return refused
        }
        // The items, or nil with the error reported and `unresolved` set to the exit code.
        var unresolved = ExitCode.failure
        func resolved() -> [any PlayableMusicItem]? {
            do {
                return try PlayResolution.resolve(parsed.positionals)
            } catch {
                Console.error("musickit play: \(errorMessage(error))\n")
                unresolved = error is PlayResolution.NotFound || error is PlayResolution.EmptyFolder ? .nothingPlayable : .failure
                return nil
            }
        }
        if parsed.has("--system") {
            if parsed.option("--device") != nil || parsed.option("--crossfade") != nil || parsed.has("--no-ui") {
                Console.error("musickit play: --system plays on the daemon's device, gaplessly and without a status line; "
                              + "--device, --crossfade and --no-ui do not apply\n\n\(help)\n")
                return .usage
            }
            guard let items = resolved() else { return unresolved }
            let found = items.map { PlayResolution.Found(item: $0) }
            let shuffles = parsed.has("--shuffle")
            return SystemCommand.withPlayer("play") { player in
                try waitFor {
                    let queue = MusicPlayer.Queue(for: [Song]())
                    // Shuffled, the queue starts at a random item, not always the first given.
                    let start = shuffles ? Int.random(in: 0..<found.count) : 0
                    for item in found[start...] + found[..<start] { try await queue.insert(item.item, position: .tail) }
                    player.state.repeatMode = repeatMode
                    player.state.shuffleMode = shuffles ? .songs : .off
                    player.queue = queue
                    try await player.play()
                }
                SystemCommand.printStatus(player)
            }
        }
        let interactive = !parsed.has("--no-ui") && Console.isInteractive
        let hasNoClock = engineConfiguration.deviceName.split(separator: ":").first == "null"
        if interactive && hasNoClock {
            Console.error("musickit play: --device \(engineConfiguration.deviceName) has no clock: it takes audio as fast as it "
                          + "is written, so the player would race through the songs. Use it with --no-ui (for scripts "
                          + "and tests), or pick a device that plays (`aplay -L`).\n")
            return .usage
        }
        // A device without a clock has no deadline to keep: silence written while the decoder is
        // behind (what speakers get) would only be more of the stream, as fast as it is written.
        if hasNoClock { engineConfiguration.underrunBehavior = .waitForData }
        let player = ApplicationMusicPlayer.shared
        player.engineConfiguration = engineConfiguration
        player.state.repeatMode = repeatMode
        player.state.shuffleMode = parsed.has("--shuffle") ? .songs : .off
        player.transition = transition
        // The player and the session with its event listener are made before the items, not
        // after: while libpulse loads on the early thread, the main thread would otherwise only
        // wait (reading a file's tags needs libsndfile, which that load brings in, and the
        // listener's task starts a thread, which waits for the loader too), and all that comes
        // once the load is over is the start's critical path (Benchmarks/RESULTS.md, 2026-12-02).
        let session = PlayerSession(player: player, interactive: interactive)
        guard let items = resolved() else { return unresolved }
        return session.run(items)
    }
}

/// One run of `musickit play`: the player, what is printed, keys and signals.
final class PlayerSession: @unchecked Sendable {
    // @unchecked: mutable state lives in `state` behind a mutex; the rest is immutable.
    private let player: ApplicationMusicPlayer
    private let interactive: Bool
    private let finished = DispatchSemaphore(value: 0)

    private struct State {
        var exitCode: ExitCode?
        var started = 0
        var failures = 0
        var statusLineShown = false
        var headerShown = false
        /// The engine's dropout counters when the entry being heard started, and its name.
        var dropoutsAtEntryStart = Dropouts()
        var heardEntry: String?
        /// The last messages, shown at the foot of the full screen.
        var messages: [String] = []
        /// What went to standard error while the full screen was up, printed again when it is left.
        var errorsWhileOnScreen: [String] = []
        /// The artwork last drawn for the screen, and for what (artwork, box size, cell size).
        var drawnArtwork: (key: ArtworkKey, art: NowPlayingScreen.Art?)?
    }

    struct ArtworkKey: Equatable {
        let artwork: Artwork
        let columns: Int
        let rows: Int
        let cellWidth: Int
        let cellHeight: Int
    }

    /// Underruns (silence written because the decoder was late) and device xruns.
    struct Dropouts: Equatable {
        var underruns = 0
        var silenceFrames = 0
        var xruns = 0
        var sampleRate = 44_100

        init() {}
        init(underruns: Int, silenceFrames: Int, xruns: Int, sampleRate: Int) {
            self.underruns = underruns
            self.silenceFrames = silenceFrames
            self.xruns = xruns
            self.sampleRate = sampleRate
        }
        init(_ statistics: AudioEngineStatistics) {
            self.init(underruns: statistics.underruns, silenceFrames: statistics.underrunSilenceFrames,
                      xruns: statistics.xruns, sampleRate: statistics.device?.sampleRate ?? 44_100)
        }

        /// "3 underruns (1.8 s of silence), 1 xrun" for what happened since `start`; nil when nothing did.
        func since(_ start: Dropouts) -> String? {
            let underruns = max(0, self.underruns - start.underruns)
            let xruns = max(0, self.xruns - start.xruns)
            guard underruns + xruns > 0 else { return nil }
            var parts: [String] = []
            if underruns > 0 {
                let seconds = Double(max(0, silenceFrames - start.silenceFrames)) / Double(sampleRate)
                parts.append("\(underruns) underrun\(underruns == 1 ? "" : "s") (\(String(format: "%.1f", seconds)) s of silence)")
            }
            if xruns > 0 { parts.append("\(xruns) xrun\(xruns == 1 ? "" : "s") (the device ran dry and was restarted)") }
            return parts.joined(separator: ", ")
        }
    }
    private let state = Mutex(State())

    /// The full-screen view, on a terminal that can show it (else the status line).
    private let screen: NowPlayingScreen?
    private let drawing = NSLock()
    /// Redraws the clock four times a second while it moves (see `updateTicker`).
    private let ticker = Mutex<(timer: DispatchSourceTimer?, running: Bool)>((nil, false))

    /// The task that handles the player's events, from `init` until `run` returns.
    private var listener: Task<Void, Never>?

    /// Listens to the player's events from here on (their handler starts the first worker
    /// thread of Swift's task pool).
    init(player: ApplicationMusicPlayer, interactive: Bool) {
        self.player = player
        self.interactive = interactive
        screen = interactive ? NowPlayingScreen() : nil
        let events = player.events()
        listener = Task { [weak self] in
            for await event in events { self?.handle(event) }
        }
    }

    func run(_ items: [any PlayableMusicItem]) -> ExitCode {
        defer { listener?.cancel() }

        let boxed = PlayResolution.Found.self
        let started = Result { try waitFor { [player] in
            let queue = ApplicationMusicPlayer.Queue(for: [Song]())
            for item in items.map({ boxed.init(item: $0) }) { try await queue.insert(item.item, position: .tail) }
            // Shuffled, the first song is a random one too, not always the first given.
            if player.state.shuffleMode == .songs { queue.currentEntry = queue.entries.randomElement() }
            player.queue = queue
            try await player.play()
        } }
        if case .failure(let error) = started { return report(error) }
        // After the first sound: the first signal source starts libdispatch's event thread, which
        // waits for the loader while the audio libraries load (~0.4 ms). Until here SIGINT and
        // SIGTERM do what they do to any program (the process ends); SIGUSR1 and SIGUSR2 were
        // noted (`PlayCommand.run`) and are handled now.
        let signals = SignalHandlers()
        signals.on(SIGINT) { [weak self] in self?.finish(.interrupted) }
        signals.on(SIGTERM) { [weak self] in self?.finish(.interrupted) }
        signals.on(SIGUSR1) { [weak self] in self?.control { try await $0.skipToNextEntry() } }
        signals.on(SIGUSR2) { [weak self] in self?.togglePause() }

        var terminal: RawTerminal?
        var keys: KeyReader?
        if interactive {
            if let screen {
                screen.enter()  // before raw mode: the crash handler restores the terminal as it was
                signals.on(SIGWINCH) { [weak self] in self?.drawStatusLine() }
            }
            terminal = RawTerminal()
            keys = KeyReader { [weak self] key in self?.handle(key) }
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "musickit.status"))
            timer.schedule(deadline: .now(), repeating: .milliseconds(250))
            timer.setEventHandler { [weak self] in self?.drawStatusLine() }
            ticker.withLock { $0 = (timer, false) }
            updateTicker()
        }
        finished.wait()
        ticker.withLock { ticker in
            guard let timer = ticker.timer else { return }
            if !ticker.running { timer.resume() }  // libdispatch: a suspended source may not be released
            timer.cancel()
            ticker = (nil, false)
        }
        player.stop()
        player.waitForHistoryWrites()
        clearStatusLine()
        if let screen {
            screen.leave()
            // What was said on the screen is gone with it: the failures and warnings stay.
            for line in state.withLock({ $0.errorsWhileOnScreen }) { Console.error(line + "\n") }
        }
        terminal?.restore()
        _ = keys
        return state.withLock { $0.exitCode ?? .success }
    }

    private func report(_ error: any Error) -> ExitCode {
        Console.error("musickit play: \(errorMessage(error))\n")
        switch error {
        case let error as MusicPlayer.PlaybackError:
            if case .audioDevice = error { return .deviceError }
            return .nothingPlayable
        case let error as MusicSubscription.Error:
            if let suggestion = error.recoverySuggestion { Console.error("  \(suggestion)\n") }
            return .failure
        default:
            return .failure
        }
    }

    private func finish(_ code: ExitCode) {
        let first = state.withLock { state -> Bool in
            guard state.exitCode == nil else { return false }
            if code == .success && state.failures > 0 {
                state.exitCode = state.started == 0 ? .nothingPlayable : .someEntriesFailed
            } else {
                state.exitCode = code
            }
            return true
        }
        if first { finished.signal() }
    }

    /// Runs a player call that may throw, reporting the error on the status line.
    private func control(_ call: @escaping @Sendable (ApplicationMusicPlayer) async throws -> Void) {
        Task { [player, weak self] in
            do { try await call(player) } catch { self?.print(line: "musickit play: \(error)", toStandardError: true) }
            self?.drawStatusLine()
        }
    }

    private func togglePause() {
        if player.state.playbackStatus == .playing {
            player.pause()
            drawStatusLine()
        } else {
            control { try await $0.play() }
        }
    }

    private func handle(_ key: Key) {
        switch key {
        case .character(" "): togglePause()
        case .character("n"), .character("N"): control { try await $0.skipToNextEntry() }
        case .character("p"), .character("P"): control { try await $0.skipToPreviousEntry() }
        case .character("f"): seeking { $0.beginSeekingForward() }
        case .character("b"): seeking { $0.beginSeekingBackward() }
        case .character("r"), .character("R"):
            let next: MusicPlayer.RepeatMode = switch player.state.repeatMode ?? .none {
            case .none: .all
            case .all: .one
            case .one: .none
            }
            player.state.repeatMode = next
        case .character("s"), .character("S"):
            player.state.shuffleMode = player.state.shuffleMode == .songs ? .off : .songs
        case .character("q"), .character("Q"): finish(.success)
        case .character("+"), .character("="), .character("-"), .character("_"):
            let up = key == .character("+") || key == .character("=")
            // Whole steps of 5 %, from wherever it was (the desktop may have set 42 %).
            let percent = min(max((Int((player.volume * 100).rounded()) / 5 + (up ? 1 : -1)) * 5, 0), 100)
            player.volume = Double(percent) / 100
            print(line: "volume \(percent)%")
        case .right: player.playbackTime += 10
        case .left: player.playbackTime = max(0, player.playbackTime - 10)
        default: break
        }
        drawStatusLine()
    }

    /// f/b start seeking; pressed again (or any key) they stop it.
    private func seeking(_ begin: (ApplicationMusicPlayer) -> Void) {
        let status = player.state.playbackStatus
        if status == .seekingForward || status == .seekingBackward {
            player.endSeeking()
        } else {
            begin(player)
        }
    }

    private func handle(_ event: ApplicationMusicPlayer.Event) {
        switch event {
        case .entryStarted(let entry):
            if state.withLock({ state in defer { state.headerShown = true }; return !state.headerShown }) {
                printHeader()
            }
            let now = Dropouts(player.engineStatistics)
            reportDropouts(now)
            let name = "\(position(of: entry)) \(describe(entry))"
            state.withLock { state in
                state.started += 1
                state.dropoutsAtEntryStart = now
                state.heardEntry = name
            }
            print(line: "▶ \(name)")
        case .entryFailed(let entry, let reason):
            state.withLock { $0.failures += 1 }
            let what = entry.map { "\(position(of: $0)) skipped “\($0.title)”" } ?? "skipped an entry"
            print(line: "✗ \(what): \(reason)", toStandardError: true)
        case .queueFinished:
            reportDropouts(Dropouts(player.engineStatistics))
            finish(.success)
        case .interrupted(let reason):
            print(line: "musickit play: \(reason)", toStandardError: true)
            finish(.deviceError)
        case .historyNotRecorded(_, let reason):
            print(line: "musickit play: \(reason)", toStandardError: true)
        case .volumeChanged(let volume):
            print(line: "volume \(Int((volume * 100).rounded()))% (set in the mixer)")
        }
    }

    /// Says what dropped out while the entry that was heard played (underruns, xruns, counted
    /// up to `now`), if anything.
    private func reportDropouts(_ now: Dropouts) {
        let (start, entry) = state.withLock { ($0.dropoutsAtEntryStart, $0.heardEntry) }
        if let entry, let summary = now.since(start) {
            print(line: "  ⚠ \(summary) during \(entry)", toStandardError: true)
        }
    }

    /// "[2/12]": where the entry is in the queue.
    private func position(of entry: MusicPlayer.Queue.Entry) -> String {
        let entries = player.queue.entries
        guard let index = entries.firstIndex(where: { $0.id == entry.id }) else { return "[\(entries.count)]" }
        return "[\(index + 1)/\(entries.count)]"
    }

    private func describe(_ entry: MusicPlayer.Queue.Entry) -> String {
        var text = entry.title
        if let subtitle = entry.subtitle { text += " — \(subtitle)" }
        if let duration = duration(of: entry) { text += "  \(formatTime(duration))" }
        return text
    }

    private func duration(of entry: MusicPlayer.Queue.Entry) -> TimeInterval? {
        switch entry.item {
        case .song(let song)?: song.duration
        case .musicVideo(let video)?: video.duration
        case nil: nil
        }
    }

    /// What the device agreed to; printed when the first entry is heard.
    private func printHeader() {
        let statistics = player.engineStatistics
        guard let device = statistics.device else { return }
        print(line: "playing on '\(statistics.deviceName ?? player.engineConfiguration.deviceName)' "
            + "(\(device.sampleRate) Hz, \(device.channelCount) ch, \(device.sampleFormat.rawValue), "
            + "period \(device.periodSizeInFrames), buffer \(device.bufferSizeInFrames) frames"
            + "\(statistics.isRealtime ? ", real-time thread" : ""))")
    }

    // MARK: Output

    private func print(line: String, toStandardError: Bool = false) {
        if screen != nil {
            // The screen shows what plays; what it cannot show (failures, dropouts) goes to its foot.
            guard toStandardError else { return }
            state.withLock { state in
                state.messages = Array((state.messages + [line]).suffix(3))
                state.errorsWhileOnScreen.append(line)
            }
            drawStatusLine()
            return
        }
        clearStatusLine()
        if toStandardError { Console.error(line + "\n") } else { Console.out(line + "\n") }
        drawStatusLine()
    }

    /// Runs the clock's ticker while the time moves (playing, scanning) and suspends it otherwise:
    /// paused or stopped, the screen changes only with events and keys, and the process sleeps
    /// (issue #41: a paused player makes no wake-ups of its own).
    private func updateTicker() {
        let status = player.state.playbackStatus
        let moving = status == .playing || status == .seekingForward || status == .seekingBackward
        ticker.withLock { ticker in
            guard let timer = ticker.timer, ticker.running != moving else { return }
            if moving { timer.resume() } else { timer.suspend() }
            ticker.running = moving
        }
    }

    private func drawStatusLine() {
        guard interactive else { return }
        defer { updateTicker() }
        if let screen {
            // From reading the player to writing the frame in one turn: frames reach the terminal
            // in the order of what they show (keys, events and the clock draw from several threads).
            drawing.withLock { screen.draw(screenModel()) }
            return
        }
        state.withLock { $0.statusLineShown = true }
        let entry = player.queue.currentEntry
        let time = "\(formatTime(player.playbackTime)) / \(entry.flatMap(duration(of:)).map(formatTime) ?? "--:--")"
        let modes = modeNames(sayingOff: false)
        let title = entry.map { String($0.title.prefix(40)) } ?? ""
        Console.replaceLine("  \(statusNames().symbol) \(title)  \(time)\(modes.isEmpty ? "" : "  [" + modes.joined(separator: ", ") + "]")"
                            + "   space n p ←/→ f b r s q")
    }

    /// The playback status as a symbol and a word.
    private func statusNames() -> (symbol: String, word: String) {
        switch player.state.playbackStatus {
        case .playing: ("▶", "Playing")
        case .paused: ("⏸", "Paused")
        case .stopped: ("■", "Stopped")
        case .interrupted: ("!", "Interrupted")
        case .seekingForward: ("⏩", "Scanning forward")
        case .seekingBackward: ("⏪", "Scanning backward")
        }
    }

    /// The repeat and shuffle modes (the ones that are off too, when `sayingOff`) and the
    /// dropouts of the entry being heard.
    private func modeNames(sayingOff: Bool) -> [String] {
        var modes: [String] = []
        switch player.state.repeatMode ?? .none {
        case .all: modes.append("repeat all")
        case .one: modes.append("repeat one")
        case .none: if sayingOff { modes.append("repeat off") }
        }
        if player.state.shuffleMode == .songs { modes.append(sayingOff ? "shuffle on" : "shuffle") } else if sayingOff { modes.append("shuffle off") }
        if let dropouts = Dropouts(player.engineStatistics).since(state.withLock { $0.dropoutsAtEntryStart }) {
            modes.append("⚠ " + dropouts)
        }
        return modes
    }

    /// What the full screen shows now.
    private func screenModel() -> NowPlayingScreen.Model {
        let entries = player.queue.entries
        let entry = player.queue.currentEntry
        let (symbol, word) = statusNames()
        let status = symbol + " " + word
        var artist: String?
        var album: String?
        switch entry?.item {
        case .song(let song)?:
            artist = song.artistName
            album = song.albumTitle
        case .musicVideo(let video)?:
            artist = video.artistName
            album = video.albumTitle
        case nil:
            artist = entry?.subtitle
        }
        var modes = modeNames(sayingOff: true)
        // The device it plays on, as the status line's `playing on '…'` says it.
        if let device = player.engineStatistics.deviceName { modes.append("on '\(device)'") }
        var upcoming: [String] = []
        if let ahead = player.shuffleAhead {
            // Shuffled: the queue's order is not what plays; the next entry is drawn ahead of
            // time, the rest as they come.
            if let next = ahead.next, let index = entries.firstIndex(where: { $0.id == next.id }) {
                upcoming.append("\(index + 1). \(describe(next))")
            }
            if ahead.unplayed > 0 {
                upcoming.append(ahead.next == nil ? "\(ahead.unplayed) in random order" : "then \(ahead.unplayed) more in random order")
            }
        } else if let entry, let index = entries.firstIndex(where: { $0.id == entry.id }) {
            for (offset, next) in entries[(index + 1)...].prefix(50).enumerated() {
                upcoming.append("\(index + offset + 2). \(describe(next))")
            }
        }
        return NowPlayingScreen.Model(
            status: status + (entry.map { "  " + position(of: $0) } ?? ""),
            title: entry?.title ?? "", artist: artist, album: album,
            time: player.playbackTime, duration: entry.flatMap(duration(of:)),
            modes: modes, upcoming: upcoming, messages: state.withLock { $0.messages }, artwork: artworkLines(for: entry))
    }

    /// The current entry's artwork for the screen's artwork box: pixels where the terminal
    /// shows them, else block symbols (made again only when the artwork, the box or the cell
    /// size changes); nil when there is none or no room for it.
    private func artworkLines(for entry: MusicPlayer.Queue.Entry?) -> NowPlayingScreen.Art? {
        guard let screen, let artwork = entry?.artwork else { return nil }
        let (columns, rows) = screen.size
        guard let box = screen.artworkBox(columns: columns, rows: rows) else { return nil }
        let cell = screen.cellPixels
        let key = ArtworkKey(artwork: artwork, columns: box.columns, rows: box.rows, cellWidth: cell.width, cellHeight: cell.height)
        if let drawn = state.withLock({ $0.drawnArtwork }), drawn.key == key { return drawn.art }
        var art: NowPlayingScreen.Art?
        if let pixelProtocol = screen.pixelProtocol,
           let url = artwork.url(width: box.columns * cell.width, height: box.rows * cell.height), url.isFileURL,
           let image = try? RGBAImage(imageFile: url.path),
           let pixels = try? TerminalImage.pixels(for: image, columns: box.columns, rows: box.rows, cellWidth: cell.width,
                                                  cellHeight: cell.height, using: pixelProtocol) {
            art = .pixels(pixels)
        } else {
            art = artwork.terminalImage(columns: box.columns, rows: box.rows).map(NowPlayingScreen.Art.lines)
        }
        state.withLock { $0.drawnArtwork = (key, art) }
        return art
    }

    private func clearStatusLine() {
        guard interactive, screen == nil else { return }
        let shown = state.withLock { state -> Bool in
            defer { state.statusLineShown = false }
            return state.statusLineShown
        }
        if shown { Console.replaceLine("") }
    }
}
