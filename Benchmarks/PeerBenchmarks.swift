import AudioEngine
import AudioMeasurement
import Foundation
import MusicKitCore

/// Other players through the same sink, in the same run: `aplay`, and when installed `mpv`
/// and MPD (through `mpc` and through its protocol on an open connection). Each is timed
/// exactly like the engine: the command or request is timestamped, the sound found at the monitor.
struct PeerBenchmarks {
    let device: String
    /// The same sink through the engine's native PulseAudio output (`pulseaudio:SINK`), when known.
    let nativeDevice: String?
    let recorder: MonitorRecorder
    let fixtures: Fixtures
    let runs: Int
    let report: Report
    let musickit: URL
    /// Another build of the tool, started in turn with `musickit` run by run (MUSICKIT_BENCH_CLI_OTHER).
    let otherMusickit: URL?

    static func installed(_ tool: String) -> URL? {
        for directory in ["/usr/bin", "/usr/local/bin", "/bin"] {
            let url = URL(fileURLWithPath: directory).appendingPathComponent(tool)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }

    private func settle() { Thread.sleep(forTimeInterval: 0.25) }

    /// Starts `executable` at a timestamp and checks the start at the monitor (the sweep,
    /// from its first frame); returns the checks.
    private func commandStarts(_ executable: URL, _ arguments: [String]) -> [StartCheck] {
        commandStarts(executable, track: fixtures.sweepSamples) { arguments }
    }

    /// `runs` starts of `executable` with the arguments `arguments` gives for each, checked
    /// at the monitor against `track` from its first frame.
    func commandStarts(_ executable: URL, track: [Int16], _ arguments: @escaping () -> [String]) -> [StartCheck] {
        interleavedStarts([(executable, arguments)], track: track)[0]
    }

    /// `runs` starts of each command, in turn run by run (so that a slow minute of the machine
    /// falls on all of them), each checked at the monitor; the checks per command, run by run.
    /// Each round starts them in another order (the same orders in every run of the benchmark),
    /// so that no command always comes right after the same one (after `mpv`'s exit, say) or
    /// always first. Two copies of one build measured so still differed by up to 0.63 ms in the
    /// median of their 30 paired differences (0.9 in a fixed order), in a busy hour of this
    /// machine: an A/B of two builds needs several passes.
    func interleavedStarts(_ commands: [(executable: URL, arguments: () -> [String])], track: [Int16]) -> [[StartCheck]] {
        var checks = commands.map { _ in [StartCheck]() }
        var random = CatalogBenchmarks.Generator(state: 8)
        for _ in 0..<runs {
            for index in commands.indices.shuffled(using: &random) {
                let command = commands[index]
                let process = Process.quiet(command.executable, command.arguments())
                let start = monotonicNanoseconds()
                do { try process.run() } catch { progress("\(command.executable.lastPathComponent): \(error)"); return checks }
                checks[index].append(recorder.checkStart(since: start, call: start, track: track, timeout: 3))
                process.terminate()
                process.waitUntilExit()
                settle()
            }
        }
        return checks
    }

    /// The floor below which the monitor cannot tell a start from frame 0: one block of the
    /// sink (new audio can begin that far into a block already sent to the monitor), or more
    /// if the control — `paplay`, a native PulseAudio client that starts its stream with the
    /// file's first frame — landed later. Every start is judged by it.
    func landingFloor() -> (floor: Int, checks: [StartCheck]) {
        guard let paplay = Self.installed("paplay") else { return (recorder.blockFrames, []) }
        let checks = commandStarts(paplay, [fixtures.sweep.path])
        let landings = checks.compactMap(\.landingFrame)
        return (max(landings.max() ?? 0, recorder.blockFrames), checks)
    }

    /// Process start -> sound for the tool (each way it can reach the sink; and another build's,
    /// MUSICKIT_BENCH_CLI_OTHER), `aplay` and `mpv`, all started in turn run by run: issue #8 asks
    /// for `musickit play FILE` at or below `aplay` in the same run, and rows measured one after
    /// the other minutes apart differed by more than that (the same binary: 7.4–10.4 ms). The
    /// last row compares them round by round.
    func commandLineTTFA(floor: Int, control: [StartCheck]) {
        var rows: [(name: String, executable: URL, arguments: [String], note: String)] = []
        let builds = [(musickit, "")] + (otherMusickit.map { [($0, " [other build]")] } ?? [])
        func musickitRow(_ name: String, _ arguments: [String], note: String) {
            for (build, suffix) in builds {
                rows.append((name + suffix, build, arguments, suffix.isEmpty ? note : "MUSICKIT_BENCH_CLI_OTHER"))
            }
        }
        // `musickit play FILE` as typed: no device named. With the test server answering (its only
        // sink is the one recorded), that is the server natively, its default sink.
        let asTyped = "musickit play FILE (CLI, its default device) TTFA: process start -> sound"
        if nativeDevice != nil, AudioEngineConfiguration.automaticDeviceName == "pulseaudio",
           getenv("MUSICKIT_AUDIO_DEVICE") == nil {
            musickitRow(asTyped, ["play", "--no-ui", fixtures.sweep.path],
                        note: "includes process start-up; no --device: a PulseAudio server's socket is there, so the native output")
        }
        musickitRow("musickit play (CLI) TTFA: process start -> sound", ["play", "--no-ui", "--device", device, fixtures.sweep.path],
                    note: "includes process start-up; ALSA pulse plugin, same device as aplay")
        if let nativeDevice {
            musickitRow("musickit play --device pulseaudio (CLI) TTFA: process start -> sound",
                        ["play", "--no-ui", "--device", nativeDevice, fixtures.sweep.path],
                        note: "includes process start-up; the engine's native PulseAudio output, same sink")
        }
        let aplayName = "aplay TTFA: process start -> sound"
        if let aplay = Self.installed("aplay") {
            rows.append((aplayName, aplay, ["-q", "-D", device, fixtures.sweep.path], "ALSA pulse plugin, same device"))
        }
        if let mpv = Self.installed("mpv") {
            rows.append(("mpv TTFA: process start -> sound", mpv,
                         ["--no-config", "--no-video", "--really-quiet", "--ao=alsa", "--audio-device=alsa/\(device)",
                          fixtures.sweep.path], "same ALSA device"))
        }
        let checks = interleavedStarts(rows.map { row in (row.executable, { row.arguments }) }, track: fixtures.sweepSamples)
        for (row, starts) in zip(rows, checks) {
            report.add(Row(row.name, starts: starts, landingFloor: floor, note: row.note + "; started in turn with the others"))
        }
        if !control.isEmpty {
            report.add(Row("paplay TTFA: process start -> sound", starts: control, landingFloor: floor,
                           note: "native PulseAudio client; the control: its largest landing frame is the floor"))
        }
        // Round by round: the tool as typed (else through the plugin) against aplay in the same round.
        let tool = rows.firstIndex { $0.name == asTyped } ?? rows.firstIndex { $0.executable == musickit }
        if let tool, let aplayIndex = rows.firstIndex(where: { $0.name == aplayName }) {
            let ratios = zip(checks[tool], checks[aplayIndex]).compactMap { mine, theirs -> Double? in
                guard mine.isIntact(landingFloor: floor), theirs.isIntact(landingFloor: floor),
                      let mine = mine.milliseconds, let theirs = theirs.milliseconds, theirs > 0 else { return nil }
                return mine / theirs
            }
            let name = rows[tool].name.components(separatedBy: " TTFA").first ?? "musickit play"
            report.add(Row("\(name) ÷ aplay, same round", unit: "×", values: ratios,
                           note: "per round, both starts intact; at or below 1.0 is issue #8's item 4"))
        }
    }

    /// Gap at the boundary when a player is given the two halves of one sweep.
    private func commandGap(_ name: String, _ executable: URL, _ arguments: [String]) {
        var gaps: [Double] = []
        var exact = 0
        for _ in 0..<runs {
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            let start = monotonicNanoseconds()
            do { try process.run() } catch { return }
            process.waitUntilExit()
            Thread.sleep(forTimeInterval: 0.3)
            if let measurement = GapMeasurement.measure(recorded: recorder.samples(after: start),
                                                        signal: fixtures.gaplessSignal, cut: Fixtures.gaplessCut) {
                gaps.append(Double(measurement.insertedFrames))
                if measurement.bitExact { exact += 1 }
            }
            settle()
        }
        report.add(Row(name, unit: "frames", values: gaps, note: "bit-exact in \(exact) of \(gaps.count) runs"))
    }

    func gaps() {
        if let aplay = Self.installed("aplay") {
            commandGap("aplay gap between two files", aplay,
                       ["-q", "-D", device, fixtures.gaplessFirst.path, fixtures.gaplessSecond.path])
        }
        if let mpv = Self.installed("mpv") {
            commandGap("mpv --gapless-audio=yes gap between two files", mpv,
                       ["--no-config", "--no-video", "--really-quiet", "--gapless-audio=yes", "--ao=alsa",
                        "--audio-device=alsa/\(device)", fixtures.gaplessFirst.path, fixtures.gaplessSecond.path])
        }
    }

    /// mpv's skip: `playlist-next` over its IPC socket while it plays silence.
    func mpvSkip(floor: Int) {
        guard let mpv = Self.installed("mpv") else { return }
        var checks: [StartCheck] = []
        for run in 0..<runs {
            let socketPath = fixtures.directory.appendingPathComponent("mpv-\(run).sock").path
            let process = Process()
            process.executableURL = mpv
            process.arguments = ["--no-config", "--no-video", "--really-quiet", "--ao=alsa", "--audio-device=alsa/\(device)",
                                 "--input-ipc-server=\(socketPath)", fixtures.silence.path, fixtures.sweep.path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            do { try process.run() } catch { return }
            let since = monotonicNanoseconds()
            Thread.sleep(forTimeInterval: 1.0)
            if let connection = try? LineConnection(unixSocket: socketPath) {
                let call = monotonicNanoseconds()
                connection.send("{\"command\": [\"playlist-next\"]}\n")
                checks.append(recorder.checkStart(since: since, call: call, track: fixtures.sweepSamples))
            }
            process.terminate()
            process.waitUntilExit()
            settle()
        }
        report.add(Row("mpv skip: playlist-next over IPC -> next file's sound", starts: checks, landingFloor: floor))
    }

    /// MPD with two outputs on the same sink — its native PulseAudio output (its fastest)
    /// and an ALSA output through the pulse plugin — each measured alone: `play`, `next` and
    /// `seekcur` on an open connection, `mpc play` as a command, and the gap between two files.
    func mpd(floor: Int) throws {
        guard let mpdBinary = Self.installed("mpd") else { return }
        let server = try MPDServer(binary: mpdBinary, device: device, fixtures: fixtures)
        defer { server.stop() }
        let connection = try server.connect()
        for (output, label) in [(MPDServer.pulseOutput, "pulse output"), (MPDServer.alsaOutput, "ALSA output")] {
            connection.command("stop")
            connection.command("enableoutput \(output)")
            connection.command("disableoutput \(1 - output)")
            measureMPD(connection, server: server, label: label, floor: floor)
        }
    }

    private func measureMPD(_ connection: LineConnection, server: MPDServer, label: String, floor: Int) {
        func load(_ files: [URL]) {
            connection.command("stop")
            connection.command("clear")
            for file in files { connection.command("add \"\(file.lastPathComponent)\"") }
        }
        var playChecks: [StartCheck] = []
        load([fixtures.sweep])
        for _ in 0..<runs {
            connection.command("stop")
            settle()
            let call = monotonicNanoseconds()
            connection.send("play\n")
            playChecks.append(recorder.checkStart(since: call - 200_000_000, call: call, track: fixtures.sweepSamples))
            _ = connection.readResponse()
        }
        connection.command("stop")
        report.add(Row("MPD (\(label)) TTFA: `play` on an open connection -> sound", starts: playChecks,
                       landingFloor: floor, note: "daemon running, queue loaded, stopped"))

        if let mpc = Self.installed("mpc") {
            var mpcChecks: [StartCheck] = []
            for _ in 0..<runs {
                connection.command("stop")
                settle()
                let process = Process()
                process.executableURL = mpc
                process.arguments = ["-q", "-p", String(server.port), "play"]
                process.standardOutput = FileHandle.nullDevice
                let call = monotonicNanoseconds()
                try? process.run()
                mpcChecks.append(recorder.checkStart(since: call - 200_000_000, call: call, track: fixtures.sweepSamples))
                process.waitUntilExit()
            }
            connection.command("stop")
            report.add(Row("MPD (\(label)) TTFA via `mpc play` -> sound", starts: mpcChecks, landingFloor: floor,
                           note: "includes mpc start-up"))
        }

        var nextChecks: [StartCheck] = []
        for _ in 0..<runs {
            load([fixtures.silence, fixtures.sweep])
            connection.command("play")
            let since = monotonicNanoseconds()
            Thread.sleep(forTimeInterval: 0.8)
            let call = monotonicNanoseconds()
            connection.send("next\n")
            nextChecks.append(recorder.checkStart(since: since, call: call, track: fixtures.sweepSamples))
            _ = connection.readResponse()
        }
        connection.command("stop")
        report.add(Row("MPD (\(label)) skip: `next` on an open connection -> next file's sound", starts: nextChecks,
                       landingFloor: floor))

        if let mpc = Self.installed("mpc") {
            var mpcNextChecks: [StartCheck] = []
            for _ in 0..<runs {
                load([fixtures.silence, fixtures.sweep])
                connection.command("play")
                let since = monotonicNanoseconds()
                Thread.sleep(forTimeInterval: 0.8)
                let process = Process()
                process.executableURL = mpc
                process.arguments = ["-q", "-p", String(server.port), "next"]
                process.standardOutput = FileHandle.nullDevice
                let call = monotonicNanoseconds()
                try? process.run()
                mpcNextChecks.append(recorder.checkStart(since: since, call: call, track: fixtures.sweepSamples))
                process.waitUntilExit()
            }
            connection.command("stop")
            report.add(Row("MPD (\(label)) skip via `mpc next` -> next file's sound", starts: mpcNextChecks, landingFloor: floor,
                           note: "process start -> sound"))
        }

        var seekChecks: [StartCheck] = []
        for _ in 0..<runs {
            load([fixtures.silenceThenSweep])
            connection.command("play")
            let since = monotonicNanoseconds()
            Thread.sleep(forTimeInterval: 0.5)
            let call = monotonicNanoseconds()
            connection.send("seekcur 2\n")
            seekChecks.append(recorder.checkStart(since: since, call: call, track: fixtures.silenceThenSweepSamples,
                                                  expectedFrame: Fixtures.silenceThenSweepSeekFrame))
            _ = connection.readResponse()
        }
        connection.command("stop")
        report.add(Row("MPD (\(label)) seek: `seekcur 2` -> sound at the target", starts: seekChecks, landingFloor: floor))

        var gaps: [Double] = []
        var exact = 0
        for _ in 0..<runs {
            load([fixtures.gaplessFirst, fixtures.gaplessSecond])
            settle()
            let start = monotonicNanoseconds()
            connection.command("play")
            Thread.sleep(forTimeInterval: 1.4)
            if let measurement = GapMeasurement.measure(recorded: recorder.samples(after: start),
                                                        signal: fixtures.gaplessSignal, cut: Fixtures.gaplessCut) {
                gaps.append(Double(measurement.insertedFrames))
                if measurement.bitExact { exact += 1 }
            }
        }
        connection.command("stop")
        report.add(Row("MPD (\(label)) gap between two files", unit: "frames", values: gaps,
                       note: "bit-exact in \(exact) of \(gaps.count) runs"))
    }
}

/// A line-oriented socket connection (MPD's protocol, mpv's IPC).
final class LineConnection {
    let descriptor: Int32

    init(unixSocket path: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            path.utf8CString.withUnsafeBytes { bytes.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0.prefix(bytes.count))) }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if result != 0 { close(descriptor); throw POSIXError(.ECONNREFUSED) }
    }

    init(port: Int) throws {
        descriptor = try connectLoopback(port: port)
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(descriptor) }

    /// Sends `text`; on a connection the peer closed, nothing (no SIGPIPE).
    func send(_ text: String) {
        _ = text.withCString { Glibc.send(descriptor, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until MPD's "OK" or "ACK" line; returns the lines.
    func readResponse() -> [String] {
        var lines: [String] = []
        var current: [UInt8] = []
        var byte: UInt8 = 0
        while read(descriptor, &byte, 1) == 1 {
            if byte == 0x0A {
                let line = String(decoding: current, as: UTF8.self)
                lines.append(line)
                current.removeAll()
                if line == "OK" || line.hasPrefix("ACK") || line.hasPrefix("OK MPD") { break }
            } else {
                current.append(byte)
            }
        }
        return lines
    }

    @discardableResult
    func command(_ text: String) -> [String] {
        send(text + "\n")
        return readResponse()
    }
}

/// A private MPD with the fixtures as its music directory and an ALSA output on the test sink.
final class MPDServer {
    let port = 6_612
    /// Output IDs, in the configuration's order.
    static let pulseOutput = 0
    static let alsaOutput = 1
    /// Its `fifo` output into Snapcast's pipe source, when it was given one (MPD's Snapcast setup).
    static let fifoOutput = 2
    let process = Process()
    private let directory: URL

    init(binary: URL, device: String, fixtures: Fixtures, snapcastFIFO: String? = nil) throws {
        directory = fixtures.directory.appendingPathComponent("mpd")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("playlists"),
                                                withIntermediateDirectories: true)
        let config = """
        music_directory "\(fixtures.directory.path)"
        playlist_directory "\(directory.appendingPathComponent("playlists").path)"
        db_file "\(directory.appendingPathComponent("database").path)"
        log_file "\(directory.appendingPathComponent("log").path)"
        bind_to_address "127.0.0.1"
        port "\(port)"
        audio_output {
            type "pulse"
            name "pulse"
            sink "musickit_test"
            mixer_type "none"
        }
        audio_output {
            type "alsa"
            name "alsa"
            device "\(device)"
            mixer_type "none"
        }
        """ + (snapcastFIFO.map { """

            audio_output {
                type "fifo"
                name "snapcast"
                path "\($0)"
                format "44100:16:2"
                mixer_type "none"
            }
            """ } ?? "")
        let configURL = directory.appendingPathComponent("mpd.conf")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        process.executableURL = binary
        process.arguments = ["--no-daemon", configURL.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date(timeIntervalSinceNow: 10)
        var ready = false
        while Date() < deadline && !ready {
            if let connection = try? LineConnection(port: port) {
                _ = connection.readResponse()
                connection.command("update")
                for _ in 0..<100 {
                    if !connection.command("status").contains(where: { $0.hasPrefix("updating_db") }) { break }
                    Thread.sleep(forTimeInterval: 0.05)
                }
                ready = true
            } else {
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        if !ready { throw POSIXError(.ETIMEDOUT) }
        // Another MPD on the port (one left behind by a benchmark that was killed) would answer
        // for this one, which exited unable to listen.
        if !process.isRunning { throw POSIXError(.EADDRINUSE) }
    }

    func connect() throws -> LineConnection {
        let connection = try LineConnection(port: port)
        _ = connection.readResponse()
        return connection
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
