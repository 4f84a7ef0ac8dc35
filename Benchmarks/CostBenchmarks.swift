import AudioEngine
import AudioMeasurement
import Foundation
import Glibc
import MusicKitCore

/// What steady playback costs, measured from outside as `top` would: over a window of a minute
/// of music, the CPU time of all the player's threads, their wake-ups (context switches), and
/// the CPU time of the sound server (the test sink's private PulseAudio or PipeWire, so all of
/// its work is for the player measured), playing, paused, and (musickit) paused once the stream is released; for musickit (the command line natively and
/// through ALSA's pulse plugin, and the daemon), MPD (its pulse output), mpv and paplay, in turn
/// round by round in the same run. Runs with no monitor recorder on the sink: a recorder's
/// latency request would set the sink's block and so the server's work for every player alike.
struct CostBenchmarks {
    let musickit: URL
    let musickitd: URL?
    /// Another build's tool and daemon, measured in turn with these (rows marked [other build]).
    let other: (musickit: URL, musickitd: URL?)?
    let nativeDevice: String
    let pluginDevice: String
    /// The sound server's processes (PulseAudio; or PipeWire, its session manager and its pulse server).
    let serverPIDs: [pid_t]
    let fixtures: Fixtures
    let assets: URL
    let rounds: Int
    let windowSeconds: Double
    /// Snapcast's pipe source and its server's process (`SnapcastServer`), when snapserver is
    /// installed: musickit and MPD (its `fifo` output) feeding it are measured too, the server's
    /// CPU being snapserver's (and the sound server's, where its client plays).
    var snapcast: SnapcastServer? = nil
    let report: Report
    /// How long a player plays before its window opens (its start and first decoding are not
    /// steady playback).
    private let settleSeconds = 4.0

    /// CPU time (ns) and context switches of each thread of a process, from /proc.
    struct Sample {
        var threads: [String: (cpuNanoseconds: UInt64, contextSwitches: UInt64)] = [:]

        init(pid: pid_t) {
            let tasks = "/proc/\(pid)/task"
            for task in (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? [] {
                var cpu: UInt64 = 0
                var switches: UInt64 = 0
                // schedstat: time on the CPU (ns), time waiting, slices; in ns, where stat's
                // utime/stime tick at 10 ms.
                if let text = try? String(contentsOfFile: "\(tasks)/\(task)/schedstat", encoding: .utf8),
                   let first = text.split(separator: " ").first, let value = UInt64(first) {
                    cpu = value
                }
                // status: voluntary_ctxt_switches and nonvoluntary_ctxt_switches, each a wake-up.
                if let text = try? String(contentsOfFile: "\(tasks)/\(task)/status", encoding: .utf8) {
                    for line in text.split(separator: "\n") where line.contains("ctxt_switches:") {
                        switches += line.split(whereSeparator: \.isWhitespace).last.flatMap { UInt64($0) } ?? 0
                    }
                }
                threads[task] = (cpu, switches)
            }
        }

        /// What the threads alive at `later` did since this sample (a thread that began in
        /// between counts from zero; one that ended in between is not counted: libdispatch's
        /// idle workers exit after 5 s).
        func until(_ later: Sample) -> (cpuNanoseconds: UInt64, contextSwitches: UInt64) {
            var cpu: UInt64 = 0
            var switches: UInt64 = 0
            for (task, after) in later.threads {
                let before = threads[task] ?? (0, 0)
                cpu += after.cpuNanoseconds >= before.cpuNanoseconds ? after.cpuNanoseconds - before.cpuNanoseconds : 0
                switches += after.contextSwitches >= before.contextSwitches ? after.contextSwitches - before.contextSwitches : 0
            }
            return (cpu, switches)
        }
    }

    /// One window's figures per second.
    struct Cost {
        var playerMillisecondsPerSecond: Double
        var wakeUpsPerSecond: Double
        var serverMillisecondsPerSecond: Double
    }

    /// Measures `pid` and the server over the window.
    private func measure(_ pid: pid_t, alsoServers extraServers: [pid_t] = []) -> Cost {
        let serverPIDs = serverPIDs + extraServers
        let player = Sample(pid: pid)
        let server = serverPIDs.map { Sample(pid: $0) }
        let began = monotonicNanoseconds()
        Thread.sleep(forTimeInterval: windowSeconds)
        let playerDone = player.until(Sample(pid: pid))
        let serverNanoseconds = zip(server, serverPIDs).map { $0.until(Sample(pid: $1)).cpuNanoseconds }.reduce(0, +)
        let seconds = Double(monotonicNanoseconds() - began) / 1e9
        return Cost(playerMillisecondsPerSecond: Double(playerDone.cpuNanoseconds) / 1e6 / seconds,
                    wakeUpsPerSecond: Double(playerDone.contextSwitches) / seconds,
                    serverMillisecondsPerSecond: Double(serverNanoseconds) / 1e6 / seconds)
    }

    /// A player to measure: starts playing `song` and returns its process, pauses it (nil when
    /// the row has no paused state), and stops it.
    private struct Subject {
        let name: String
        let start: (URL) throws -> Running
        let pause: ((Running) throws -> Void)?
        /// Servers it feeds besides the sound server (snapserver).
        var servers: [pid_t] = []
    }

    /// A player's process as measured, and how it is stopped.
    private struct Running {
        let pid: pid_t
        let stop: () -> Void

        /// A process started with Foundation's `Process`, stopped by SIGTERM.
        init(_ process: Process) {
            pid = process.processIdentifier
            stop = { CostBenchmarks.terminate(process) }
        }

        init(pid: pid_t, stop: @escaping () -> Void) {
            self.pid = pid
            self.stop = stop
        }
    }

    func run() throws {
        // A minute of music, FLAC: two bundled previews one after the other.
        let song = fixtures.directory.appendingPathComponent("cost-minute.flac")
        let first = try Fixtures.decode(assets.appendingPathComponent("Previews/mx-ar-01.ogg").path, seconds: 30)
        let second = try Fixtures.decode(assets.appendingPathComponent("Previews/mx-ar-02.ogg").path, seconds: 30)
        try Fixtures.write(song, first + second, format: .flac16)

        let work = fixtures.directory.appendingPathComponent("cost-\(getpid())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        var environment = ProcessInfo.processInfo.environment
        // Musickit's players release a paused stream after a while (30 s by default): here just
        // after the first paused window, so that a second one measures the released state.
        let releaseSeconds = windowSeconds + 2
        environment["MUSICKIT_PAUSED_RELEASE_SECONDS"] = "\(releaseSeconds)"
        for (key, folder) in [("MUSICKIT_CONFIG_DIR", "config"), ("MUSICKIT_DATA_DIR", "data"), ("MUSICKIT_RUNTIME_DIR", "runtime")] {
            let url = work.appendingPathComponent(folder)
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
            environment[key] = url.path
        }

        var subjects: [Subject] = []
        var builds: [(musickit: URL, musickitd: URL?, mark: String)] = [(musickit, musickitd, "")]
        if let other { builds.append((other.musickit, other.musickitd, " [other build]")) }
        for (musickit, musickitd, mark) in builds {
            for (label, device) in [("native PulseAudio", nativeDevice), ("ALSA pulse plugin", pluginDevice)] {
                subjects.append(Subject(name: "musickit play FILE (\(label))\(mark)", start: { song in
                    Running(try Self.launch(musickit, ["play", "--no-ui", "--device", device, song.path], environment: environment))
                }, pause: { running in kill(running.pid, SIGUSR2) }))
            }
            if let musickitd {
                var daemonEnvironment = environment
                daemonEnvironment["MUSICKIT_AUDIO_DEVICE"] = nativeDevice
                subjects.append(Subject(name: "musickitd\(mark)", start: { song in
                    // Through posix_spawn, not `Process`: the daemon closes the descriptors it
                    // inherited, and `Process` then waits for it as if it had exited (see spawnProcess).
                    let daemon = try spawnProcess([musickitd.path], environment: daemonEnvironment,
                                                  outputPath: "/dev/null", newSession: false).get()
                    // Its socket first, or the client would start a daemon of its own.
                    let socket = work.appendingPathComponent("runtime/player.sock").path
                    for _ in 0..<500 where !FileManager.default.fileExists(atPath: socket) { usleep(10_000) }
                    let play = try Self.launch(musickit, ["play", "--system", song.path], environment: daemonEnvironment)
                    play.waitUntilExit()
                    return Running(pid: daemon) {
                        kill(daemon, SIGTERM)
                        var status: Int32 = 0
                        waitpid(daemon, &status, 0)
                    }
                }, pause: { _ in
                    let pause = try Self.launch(musickit, ["pause"], environment: daemonEnvironment)
                    pause.waitUntilExit()
                }))
            }
        }
        if let snapcast {
            let device = "snapcast:\(snapcast.fifo)?rate=44100&buffer=1000"
            subjects.append(Subject(name: "musickit play --device snapcast:FIFO", start: { song in
                Running(try Self.launch(musickit, ["play", "--no-ui", "--device", device, song.path], environment: environment))
            }, pause: { running in kill(running.pid, SIGUSR2) }, servers: [snapcast.pid]))
        }
        var mpdServer: MPDServer?
        if let mpd = PeerBenchmarks.installed("mpd") {
            let server = try MPDServer(binary: mpd, device: pluginDevice, fixtures: fixtures, snapcastFIFO: snapcast?.fifo)
            mpdServer = server
            let connection = try server.connect()
            connection.command("disableoutput \(MPDServer.alsaOutput)")
            let outputs = [MPDServer.pulseOutput] + (snapcast != nil ? [MPDServer.fifoOutput] : [])
            /// MPD playing through `output` alone (of its pulse and fifo outputs); a connection
            /// per command: MPD closes one that was idle for a minute.
            func mpdSubject(_ name: String, output: Int, servers: [pid_t] = []) -> Subject {
                Subject(name: name, start: { song in
                    let connection = try server.connect()
                    connection.command("stop")
                    for other in outputs where other != output { connection.command("disableoutput \(other)") }
                    connection.command("enableoutput \(output)")
                    connection.command("clear")
                    connection.command("add \"\(song.lastPathComponent)\"")
                    connection.command("play")
                    let status = connection.command("status")
                    if !status.contains("state: play") { progress("  MPD does not play: \(status.joined(separator: "; "))") }
                    return Running(pid: server.process.processIdentifier) { _ = try? server.connect().command("stop") }
                }, pause: { _ in try server.connect().command("pause 1") }, servers: servers)
            }
            subjects.append(mpdSubject("MPD (pulse output)", output: MPDServer.pulseOutput))
            if let snapcast {
                subjects.append(mpdSubject("MPD (fifo output into snapserver)", output: MPDServer.fifoOutput, servers: [snapcast.pid]))
            }
        }
        defer { mpdServer?.stop() }
        if let mpv = PeerBenchmarks.installed("mpv") {
            subjects.append(Subject(name: "mpv --ao=pulse", start: { song in
                Running(try Self.launch(mpv, ["--no-video", "--no-terminal", "--ao=pulse", song.path], environment: environment))
            }, pause: nil))
        }
        if let paplay = PeerBenchmarks.installed("paplay") {
            subjects.append(Subject(name: "paplay", start: { song in
                Running(try Self.launch(paplay, [song.path], environment: environment))
            }, pause: nil))
        }

        var playing: [String: [Cost]] = [:]
        var paused: [String: [Cost]] = [:]
        var released: [String: [Cost]] = [:]
        var random = CatalogBenchmarks.Generator(state: 41)
        for round in 0..<rounds {
            for subject in subjects.shuffled(using: &random) {
                progress("  cost, round \(round + 1) of \(rounds): \(subject.name)")
                let running: Running
                do { running = try subject.start(song) } catch { progress("  \(subject.name): \(error)"); continue }
                Thread.sleep(forTimeInterval: settleSeconds)
                playing[subject.name, default: []].append(measure(running.pid, alsoServers: subject.servers))
                if let pause = subject.pause {
                    try pause(running)
                    Thread.sleep(forTimeInterval: 1)
                    paused[subject.name, default: []].append(measure(running.pid, alsoServers: subject.servers))
                    if subject.name.hasPrefix("musickit") {
                        Thread.sleep(forTimeInterval: 1.5)  // past releaseSeconds since the pause
                        released[subject.name, default: []].append(measure(running.pid, alsoServers: subject.servers))
                    }
                }
                running.stop()
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
        let window = "\(format(windowSeconds)) s windows \(format(settleSeconds)) s into a 60 s FLAC, \(rounds) rounds"
        for subject in subjects {
            let states = [("playing", playing[subject.name] ?? []), ("paused", paused[subject.name] ?? []),
                          ("paused, output released", released[subject.name] ?? [])]
            for (state, costs) in states where !costs.isEmpty {
                let name = "cost, \(state): \(subject.name)"
                report.add(Row("\(name) — player CPU", unit: "ms/s", values: costs.map(\.playerMillisecondsPerSecond),
                               note: "all its threads; \(window)"))
                report.add(Row("\(name) — player wake-ups", unit: "/s", values: costs.map(\.wakeUpsPerSecond),
                               note: "context switches of all its threads"))
                report.add(Row("\(name) — server CPU", unit: "ms/s", values: costs.map(\.serverMillisecondsPerSecond),
                               note: "the sound server's processes, over the same window"))
                report.add(Row("\(name) — player + server CPU", unit: "ms/s",
                               values: costs.map { $0.playerMillisecondsPerSecond + $0.serverMillisecondsPerSecond }))
            }
        }
    }

    private static func launch(_ executable: URL, _ arguments: [String], environment: [String: String]) throws -> Process {
        let process = Process.quiet(executable, arguments, environment: environment)
        try process.run()
        return process
    }

    fileprivate static func terminate(_ process: Process) {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
