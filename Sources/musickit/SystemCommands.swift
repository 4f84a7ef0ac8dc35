import CEarlyRequest
import Foundation
import Glibc
import MusicKitCore
import MusicKitTerminal

// The system player from the command line: `musickit status|pause|next|previous|seek|volume|queue`
// talk to musickitd through SystemMusicPlayer (starting it when none runs); `musickit daemon`
// starts, stops, shows and reads it; `musickit play --system` is in PlayCommand.

/// One command that does one thing to the system player.
enum SystemCommand {
    static let commands: [Command] = [
        command("status", "what the system player (musickitd) plays, and where") { player in
            try player.connect()
            printStatus(player)
        },
        command("pause", "pause the system player") { player in
            player.pause()
            try player.synchronize()
            printStatus(player)
        },
        command("resume", "play the system player's queue (from where it stopped)") { player in
            try player.playNow()
            printStatus(player)
        },
        command("next", "skip the system player to its next entry") { player in
            try player.skipToNextEntryNow()
            printStatus(player)
        },
        command("previous", "skip the system player to its previous entry (or restart after 3 s)") { player in
            try player.skipToPreviousEntryNow()
            printStatus(player)
        },
        command("stop", "stop the system player (its queue stays)") { player in
            player.stop()
            try player.synchronize()
            printStatus(player)
        },
        command("queue", "the system player's current entry (an app sees no other, as on iOS)") { player in
            try player.connect()
            if let entry = player.queue.currentEntry {
                Console.out("\(describe(entry))\n")
            } else {
                Console.out("the system player's queue is empty\n")
            }
        },
    ]

    /// `musickit seek SECONDS`.
    static let seek = Command(
        name: "seek", summary: "move the system player to a time in its current entry",
        help: { "usage: musickit seek SECONDS\n\nMoves the system player (musickitd) to SECONDS into its current entry.\n\n"
                + "exit codes:\n\(ExitCode.helpText)" },
        run: { arguments in
            guard arguments.count == 1, let seconds = Double(arguments[0]), seconds >= 0, seconds.isFinite else {
                Console.error("musickit seek: give one time in seconds (e.g. musickit seek 42)\n")
                return .usage
            }
            return withPlayer("seek") { player in
                player.playbackTime = seconds
                try player.synchronize()
                printStatus(player)
            }
        })

    /// `musickit volume [PERCENT|+N|-N]`.
    static let volume = Command(
        name: "volume", summary: "show or set the system player's volume (0-100 %)",
        help: { """
            usage: musickit volume [PERCENT | +N | -N]

            Without an argument, prints the system player's (musickitd's) volume. PERCENT (0-100)
            sets it; +N and -N turn it up or down by N points. On a PulseAudio or PipeWire server it
            is the player's stream volume there (the desktop's mixer shows the same); on an ALSA
            device the player scales the samples. Heard at once; kept by the daemon.

            exit codes:
            \(ExitCode.helpText)
            """ },
        run: { arguments in
            guard arguments.count <= 1 else {
                Console.error("musickit volume: give at most one value (e.g. musickit volume 50, musickit volume -10)\n")
                return .usage
            }
            var change: (relative: Bool, points: Int)?
            if let argument = arguments.first {
                let relative = argument.hasPrefix("+") || argument.hasPrefix("-")
                guard let points = Int(argument), relative || (0...100).contains(points) else {
                    Console.error("musickit volume: '\(argument)' is not a percentage from 0 to 100 or a change like +5 or -10\n")
                    return .usage
                }
                change = (relative, points)
            }
            return withPlayer("volume") { player in
                try player.synchronize()  // the daemon's state, the volume with it
                if let change {
                    let percent = change.relative ? Int((player.volume * 100).rounded()) + change.points : change.points
                    player.volume = Double(min(max(percent, 0), 100)) / 100
                    try player.synchronize()
                }
                Console.out("volume: \(Int((player.volume * 100).rounded()))%\n")
            }
        })

    private static func command(_ name: String, _ summary: String,
                                _ body: @escaping @Sendable (SystemMusicPlayer) throws -> Void) -> Command {
        Command(name: name, summary: summary,
                help: { "usage: musickit \(name)\n\n\(summary.prefix(1).uppercased() + summary.dropFirst()) "
                        + "(the daemon musickitd; started if none runs).\n\nexit codes:\n\(ExitCode.helpText)" },
                run: { arguments in
                    guard arguments.isEmpty else {
                        Console.error("musickit \(name): takes no arguments, got \(arguments.joined(separator: " "))\n")
                        return .usage
                    }
                    return withPlayer(name, body)
                })
    }

    /// Runs `body` with a short-lived system player, which connects at `body`'s first request
    /// (starting the daemon if none runs) and takes the daemon's state from its answer, so that
    /// `musickit next` costs one connection and one round trip. A daemon that cannot be reached
    /// or refuses is exit 1.
    /// `next`, `previous` and `resume` have sent their request already, when the process started
    /// (Sources/CEarlyRequest/EarlyRequest.c): the player reads its answer.
    static func withPlayer(_ name: String, _ body: (SystemMusicPlayer) throws -> Void) -> ExitCode {
        let player = SystemMusicPlayer(environment: nil, shortLived: true, sentAtStart: requestSentAtStart())
        do {
            try body(player)
            return .success
        } catch {
            Console.error("musickit \(name): \(error)\n")
            return .failure
        }
    }

    /// The socket and operation of the request sent at process start, if one was.
    private static func requestSentAtStart() -> (descriptor: Int32, operation: String)? {
        var operation: UnsafePointer<CChar>?
        let descriptor = musickit_early_request_take(&operation)
        guard descriptor >= 0, let operation else { return nil }
        return (descriptor, String(cString: operation))
    }

    static func printStatus(_ player: SystemMusicPlayer) {
        let state = player.state
        var line = name(of: state.playbackStatus)
        if let entry = player.queue.currentEntry {
            line += ": \(describe(entry))  at \(formatTime(player.playbackTime))"
        } else {
            line += " (empty queue)"
        }
        let repeatMode = switch state.repeatMode ?? .none { case .none: "none"; case .one: "one"; case .all: "all" }
        line += "  repeat \(repeatMode), shuffle \(state.shuffleMode == .songs ? "on" : "off")"
        Console.out(line + "\n")
    }

    /// The status as a word (spelled out: interpolating the enum would go through reflection,
    /// a measurable part of a short command's run).
    static func name(of status: MusicPlayer.PlaybackStatus) -> String {
        switch status {
        case .stopped: "stopped"
        case .playing: "playing"
        case .paused: "paused"
        case .interrupted: "interrupted"
        case .seekingForward: "seekingForward"
        case .seekingBackward: "seekingBackward"
        }
    }

    static func describe(_ entry: MusicPlayer.Queue.Entry) -> String {
        entry.subtitle.map { "\(entry.title) — \($0)" } ?? entry.title
    }
}

/// `musickit daemon start|stop|status|logs`.
enum DaemonCommand {
    static let help = """
    usage: musickit daemon start|stop|status|logs
           musickit daemon device [NAME|--default]
           musickit daemon mpd-port [PORT|--off]

    The system player's daemon, musickitd: one per user, started by the first client that needs
    it (SystemMusicPlayer, musickit play --system, musickit status...), or by its systemd user
    unit (see the README). It keeps playing when every client has gone and keeps its queue and
    position across restarts.

      start    start it if it does not run; print its process ID
      stop     save its state and stop it
      status   whether it runs (exit 1 when it does not), its process ID, its sockets (the
               player's, and MPD's for MPD_HOST) and its log
      logs     print its log ($XDG_RUNTIME_DIR/musickit/musickitd.log)
      device   print the device it plays on when it starts; with NAME (as `musickit play
               --device` takes: pulseaudio:SINK, hw:0, snapcast:FIFO...) keep that one, with
               --default go back to the default; kept in musickitd.json beside the account,
               used from its next start (MUSICKIT_AUDIO_DEVICE in its environment comes first)
      mpd-port print the TCP port it also serves MPD's protocol on, on 127.0.0.1 (off unless
               set); with PORT (6600 is MPD's, where phone apps and Snapcast's meta_mpd.py
               look) keep that one, with --off only the MPD socket; from its next start
               (MUSICKIT_MPD_PORT in its environment comes first)

    exit codes:
    \(ExitCode.helpText)
    """

    static func run(_ arguments: [String]) -> ExitCode {
        if arguments.first == "device", arguments.count <= 2 { return device(arguments.dropFirst().first) }
        if arguments.first == "mpd-port", arguments.count <= 2 { return mpdPort(arguments.dropFirst().first) }
        guard arguments.count == 1 else {
            Console.error("musickit daemon: give one of start, stop, status, logs, device, mpd-port\n\n\(help)\n")
            return .usage
        }
        switch arguments[0] {
        case "start":
            return SystemCommand.withPlayer("daemon start") { player in
                Console.out("musickitd runs (process \(try player.daemonProcessID()))\n")
            }
        case "stop":
            guard SystemMusicPlayer.runningDaemonProcessID() != nil else {
                Console.out("musickitd does not run\n")
                return .success
            }
            return SystemCommand.withPlayer("daemon stop") { player in
                try player.stopDaemon()
                Console.out("musickitd stopped\n")
            }
        case "status":
            // Where clients find it, running or not (MPD's clients: MPD_HOST=<the MPD socket>).
            let sockets = """
                  socket:     \(SystemMusicPlayer.socketURL().path)
                  MPD socket: \(SystemPlayerWire.mpdSocketURL(.current).path)
                  log:        \(SystemMusicPlayer.daemonLogURL().path)

                """
            let settings = SystemPlayerSettings.load().settings
            let device = "  device:     \(settings.device ?? "the default") "
                + "(musickit daemon device; MUSICKIT_AUDIO_DEVICE at its start comes first)\n"
                + "  MPD port:   \(settings.mpdPort.map { "127.0.0.1:\($0)" } ?? "off") "
                + "(musickit daemon mpd-port; MUSICKIT_MPD_PORT at its start comes first)\n"
            guard let pid = SystemMusicPlayer.runningDaemonProcessID() else {
                Console.out("musickitd does not run\n" + sockets + device)
                return .failure
            }
            Console.out("musickitd runs (process \(pid))\n" + sockets + device)
            return .success
        case "logs":
            let url = SystemMusicPlayer.daemonLogURL()
            guard let text = try? String(contentsOf: url, encoding: .utf8) else {
                Console.out("no log yet at \(url.path)\n")
                return .success
            }
            Console.out(text)
            return .success
        case let other:
            Console.error("musickit daemon: unknown action '\(other)'\n\n\(help)\n")
            return .usage
        }
    }

    /// `musickit daemon device [NAME|--default]`.
    private static func device(_ argument: String?) -> ExitCode {
        guard let argument else {
            let (settings, problem) = SystemPlayerSettings.load()
            if let problem { Console.error("warning: \(problem)\n") }
            Console.out((settings.device ?? "the default (the sound server natively, else ALSA's default)") + "\n")
            return .success
        }
        if argument.hasPrefix("-") && argument != "--default" {
            Console.error("musickit daemon device: unknown option \(argument)\n\n\(help)\n")
            return .usage
        }
        do {
            try SystemPlayerSettings.update { $0.device = argument == "--default" ? nil : argument }
        } catch {
            Console.error("musickit daemon device: \(errorMessage(error))\n")
            return .failure
        }
        let running = SystemMusicPlayer.runningDaemonProcessID() != nil
        Console.out("musickitd plays on \(argument == "--default" ? "the default device" : argument) from its next start"
                    + (running ? " (it runs now: musickit daemon stop, then start)" : "") + "\n")
        return .success
    }

    /// `musickit daemon mpd-port [PORT|--off]`.
    private static func mpdPort(_ argument: String?) -> ExitCode {
        guard let argument else {
            let (settings, problem) = SystemPlayerSettings.load()
            if let problem { Console.error("warning: \(problem)\n") }
            Console.out(settings.mpdPort.map { "\($0)\n" } ?? "off (the MPD socket only)\n")
            return .success
        }
        let port = UInt16(argument)
        guard argument == "--off" || (port ?? 0) > 0 else {
            Console.error("musickit daemon mpd-port: give a port (1-65535) or --off, not \(argument)\n\n\(help)\n")
            return .usage
        }
        do {
            try SystemPlayerSettings.update { $0.mpdPort = port }
        } catch {
            Console.error("musickit daemon mpd-port: \(errorMessage(error))\n")
            return .failure
        }
        let running = SystemMusicPlayer.runningDaemonProcessID() != nil
        Console.out((port.map { "musickitd serves MPD's protocol on 127.0.0.1:\($0)" } ?? "musickitd serves MPD's protocol on its socket only")
                    + " from its next start" + (running ? " (it runs now: musickit daemon stop, then start)" : "") + "\n")
        return .success
    }
}
