import AudioEngine
import Foundation
import Synchronization

/// `musickit play FILE...`: plays audio files through the engine, gaplessly.
enum PlayCommand {
    static let spec = ArgumentSpec(
        options: [.init(name: "--device", valueName: "NAME",
                        help: "ALSA playback device (default: default; see `aplay -L`)")],
        flags: [.init(name: "--no-ui", help: "no keys and no live status line; one line per event")],
        positionalName: "FILE|ID|TERM...", minimumPositionals: 1)

    static let help = """
    usage: musickit play [--device NAME] [--no-ui] FILE|ID|TERM...

    Plays audio files (WAV, FLAC, Ogg Vorbis, Opus, MP3, ...) and catalog songs, albums and
    playlists (by ID, or the best match for a search term: `musickit play gapless demo`) one
    after the other without a gap, through ALSA. A file that cannot be played is skipped with
    the reason.

    options:
    \(spec.optionsHelp())

    keys: space pause/resume, n next, p previous, ←/→ seek 5 s, r restart, q quit
    signals: SIGINT/SIGTERM stop, SIGUSR1 next, SIGUSR2 pause/resume

    exit codes:
    \(ExitCode.helpText)
    """

    static func run(_ arguments: [String]) -> ExitCode {
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
        } catch {
            Console.error("musickit play: \(error)\n\n\(help)\n")
            return .usage
        }
        var configuration = AudioEngineConfiguration()
        if let device = parsed.option("--device") { configuration.deviceName = device }
        let interactive = !parsed.has("--no-ui") && Console.isInteractive
        let items: [PlayItem]
        do {
            items = try PlayResolution.resolve(parsed.positionals)
        } catch let error as PlayResolution.NotFound {
            Console.error("musickit play: \(error)\n")
            return .nothingPlayable
        } catch {
            Console.error("musickit play: \(error)\n")
            return .failure
        }
        let session = FilePlaybackSession(items: items, configuration: configuration, interactive: interactive)
        return session.run()
    }
}

/// One run of `musickit play` over files: the engine, what is printed, keys and signals.
final class FilePlaybackSession: @unchecked Sendable {
    // @unchecked: mutable state lives in `state` behind a mutex; the rest is immutable.
    private let items: [PlayItem]
    private var paths: [String] { items.map(\.path) }
    private let engine: AudioEngine
    private let interactive: Bool
    private let finished = DispatchSemaphore(value: 0)

    private struct State {
        var exitCode: ExitCode?
        var failures = 0
        var current: Int?
        var infos: [Int: AudioFileInfo] = [:]
        var statusLineShown = false
        var headerShown = false
    }
    private let state = Mutex(State())

    init(items: [PlayItem], configuration: AudioEngineConfiguration, interactive: Bool) {
        self.items = items
        self.engine = AudioEngine(configuration: configuration)
        self.interactive = interactive
    }

    func run() -> ExitCode {
        engine.setEventHandler { [weak self] event in self?.handle(event) }
        engine.setQueue(AudioEntryList(paths: paths))

        let signals = SignalHandlers()
        signals.on(SIGINT) { [weak self] in self?.finish(.interrupted) }
        signals.on(SIGTERM) { [weak self] in self?.finish(.interrupted) }
        signals.on(SIGUSR1) { [weak self] in self?.engine.skipToNextEntry() }
        signals.on(SIGUSR2) { [weak self] in self?.togglePause() }

        do {
            try engine.play()
        } catch {
            Console.error("musickit play: \(error)\n")
            if case .device = error { return .deviceError }
            return .nothingPlayable
        }
        var terminal: RawTerminal?
        var keys: KeyReader?
        var ticker: DispatchSourceTimer?
        if interactive {
            terminal = RawTerminal()
            keys = KeyReader { [weak self] key in self?.handle(key) }
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "musickit.status"))
            timer.schedule(deadline: .now(), repeating: .milliseconds(250))
            timer.setEventHandler { [weak self] in self?.drawStatusLine() }
            timer.resume()
            ticker = timer
        }
        finished.wait()
        ticker?.cancel()
        engine.stop()
        clearStatusLine()
        terminal?.restore()
        _ = keys
        return state.withLock { $0.exitCode ?? .success }
    }

    private func finish(_ code: ExitCode) {
        let first = state.withLock { state -> Bool in
            guard state.exitCode == nil else { return false }
            state.exitCode = code == .success && state.failures > 0
                ? (state.failures == paths.count ? .nothingPlayable : .someEntriesFailed) : code
            return true
        }
        if first { finished.signal() }
    }

    private func togglePause() {
        if engine.status == .paused { engine.resume() } else { engine.pause() }
        drawStatusLine()
    }

    private func handle(_ key: Key) {
        switch key {
        case .character(" "): togglePause()
        case .character("n"), .character("N"): engine.skipToNextEntry()
        case .character("p"), .character("P"): engine.skipToPreviousEntry()
        case .character("r"): engine.restartCurrentEntry()
        case .character("q"), .character("Q"): finish(.success)
        case .right: engine.seek(toSeconds: engine.position.seconds + 5)
        case .left: engine.seek(toSeconds: max(0, engine.position.seconds - 5))
        default: break
        }
    }

    private func handle(_ event: AudioEngineEvent) {
        switch event {
        case .entryStarted(let token, _):
            if state.withLock({ state in defer { state.headerShown = true }; return !state.headerShown }) {
                printHeader()
            }
            let index = Int(token.rawValue) - 1
            let info = items[index].title == nil ? try? AudioFileDecoder.info(path: paths[index]) : nil
            state.withLock { state in
                state.current = index
                state.infos[index] = info
            }
            print(line: "▶ [\(index + 1)/\(paths.count)] \(describe(index: index, info: info))")
        case .entryFailed(let token, let error):
            state.withLock { $0.failures += 1 }
            print(line: "✗ [\(token.rawValue)/\(paths.count)] skipped: \(error)", toStandardError: true)
        case .queueFinished:
            finish(.success)
        case .deviceFailed(let error):
            print(line: "musickit play: \(error)", toStandardError: true)
            finish(.deviceError)
        case .underrun(let total):
            if !interactive { print(line: "underrun (\(total) so far)", toStandardError: true) }
        case .xrun(let total):
            if !interactive { print(line: "device xrun recovered (\(total) so far)", toStandardError: true) }
        case .entryFinished:
            break
        }
    }

    /// What the device agreed to; printed when the first entry is heard.
    private func printHeader() {
        let statistics = engine.statistics
        guard let device = statistics.device else { return }
        print(line: "playing \(paths.count) entr\(paths.count == 1 ? "y" : "ies") on '\(engine.configuration.deviceName)' "
            + "(\(device.sampleRate) Hz, \(device.channelCount) ch, \(device.sampleFormat.rawValue), "
            + "period \(device.periodSizeInFrames), buffer \(device.bufferSizeInFrames) frames"
            + "\(statistics.isRealtime ? ", real-time thread" : ""))")
    }

    private func describe(index: Int, info: AudioFileInfo?) -> String {
        if let title = items[index].title {
            return title + (items[index].subtitle.map { " — \($0)" } ?? "") + "  \(formatTime(items[index].duration ?? 0))"
        }
        let file = (paths[index] as NSString).lastPathComponent
        guard let info else { return file }
        var text = info.title ?? file
        if let artist = info.artist { text += " — \(artist)" }
        if let album = info.album { text += " (\(album))" }
        return text + "  \(formatTime(info.duration))"
    }

    // MARK: Output

    private func print(line: String, toStandardError: Bool = false) {
        clearStatusLine()
        if toStandardError { Console.error(line + "\n") } else { Console.out(line + "\n") }
        drawStatusLine()
    }

    private func drawStatusLine() {
        guard interactive else { return }
        let position = engine.position
        let (duration, paused) = state.withLock { state -> (Double?, Bool) in
            state.statusLineShown = true
            return (state.current.flatMap { state.infos[$0]?.duration ?? items[$0].duration }, false)
        }
        _ = paused
        let status = engine.status == .paused ? "paused " : "playing"
        let time = "\(formatTime(position.seconds)) / \(duration.map(formatTime) ?? "--:--")"
        Console.out("\r\u{1B}[2K  \(status)  \(time)   [space] pause  [n]ext  [p]rev  [←/→] seek  [q]uit")
    }

    private func clearStatusLine() {
        guard interactive else { return }
        let shown = state.withLock { state -> Bool in
            defer { state.statusLineShown = false }
            return state.statusLineShown
        }
        if shown { Console.out("\r\u{1B}[2K") }
    }
}
