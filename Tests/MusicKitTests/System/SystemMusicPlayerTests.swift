import PlatformSupport
import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import Glibc
@testable import MusicKitCore
@testable import MusicKitDaemon
import Observation
import Synchronization
import XCTest

/// `SystemMusicPlayer` against a real `musickitd` (started on demand from the build folder) in
/// a private environment, playing to the test sink.
final class SystemMusicPlayerTests: XCTestCase {
    private var environment: MusicKitEnvironment!
    private var directory: URL!
    private var daemons: [SystemMusicPlayer] = []

    override func setUpWithError() throws {
        environment = try useTemporaryEnvironment(self)
        directory = try makeTemporaryDirectory(self)
        let device = try AudioTestEnvironment.requirePulse()
        let previous = ProcessInfo.processInfo.environment["MUSICKIT_AUDIO_DEVICE"]
        setenv("MUSICKIT_AUDIO_DEVICE", device, 1)
        addTeardownBlock { [self] in
            // Stop the daemon this test started (by its answer to a request, not by name).
            if let player = daemons.first { try? player.stopDaemon() }
            if let previous { setenv("MUSICKIT_AUDIO_DEVICE", previous, 1) } else { unsetenv("MUSICKIT_AUDIO_DEVICE") }
        }
    }

    /// A client of this test's daemon, as another app would have.
    private func client() -> SystemMusicPlayer {
        let player = SystemMusicPlayer(environment: environment)
        daemons.append(player)
        return player
    }

    private func tones(_ count: Int, frames: Int = 22_050) throws -> [Song] {
        try GeneratedSongs.tones((0..<count).map { 300 + 100 * Double($0) }, frames: frames, into: directory).songs
    }

    /// A play whose device never answers (a sound server that accepts and stays silent;
    /// libpulse would wait 30 s) holds no one (issue #42: play, next and seek waited in one
    /// queue): another client's `next` supersedes it after ~0.1 s and moves to the next song,
    /// the stuck `play` is answered OK, playback is started again after the skip, `status` is
    /// answered throughout, and `stop` gives the new start up too.
    func testAStartStuckOpeningIsSupersededByAnotherClientsNext() throws {
        let server = try SilentUnixServer(path: directory.appendingPathComponent("silent-pulse").path)
        defer { server.close() }
        let previousServer = ProcessInfo.processInfo.environment["PULSE_SERVER"]
        setenv("PULSE_SERVER", "unix:\(server.path)", 1)
        setenv("MUSICKIT_AUDIO_DEVICE", "pulseaudio", 1)  // libpulse, which the engine can give up
        let daemon = client()
        _ = try daemon.daemonProcessID()  // started with this environment
        if let previousServer { setenv("PULSE_SERVER", previousServer, 1) } else { unsetenv("PULSE_SERVER") }
        let mpdPath = SystemPlayerWire.mpdSocketURL(environment).path

        let songs = try tones(2)
        let control = try MPDSocket(path: mpdPath)
        _ = control.greeting()
        for song in songs {
            XCTAssertEqual(control.exchange("add \"\(try XCTUnwrap(song.resource.string("filePath")))\"\n"), "OK\n")
        }
        /// Sends `command` on a connection of its own, from another thread; its answer once it comes.
        func sendAside(_ command: String) throws -> (answered: DispatchSemaphore, answer: @Sendable () -> String?) {
            let connection = try MPDSocket(path: mpdPath)
            _ = connection.greeting()
            let answer = PendingAnswer()
            let answered = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                let reply = connection.exchange(command)
                answer.text.withLock { $0 = reply }
                answered.signal()
            }
            return (answered, { answer.text.withLock { $0 } })
        }
        let play = try sendAside("play\n")
        XCTAssertTrue(server.waitForConnection(timeout: 10), "the daemon's start reached the silent server")
        XCTAssertEqual(play.answered.wait(timeout: .now() + 0.3), .timedOut, "the play waits for the device")
        XCTAssertTrue(control.exchange("status\n").contains("state: stop\n"), "status answered while it waits")

        let skip = try sendAside("next\n")
        XCTAssertEqual(skip.answered.wait(timeout: .now() + 5), .success, "next answered long before libpulse's 30 s")
        XCTAssertEqual(skip.answer(), "OK\n")
        XCTAssertEqual(play.answered.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(play.answer(), "OK\n", "the superseded play is answered as done")
        XCTAssertTrue(control.exchange("status\n").contains("song: 1\n"), "on the second song")
        // The first connection was the play's (nothing is prepared while the queue was empty
        // at start-up and only added to since); the next is playback started again.
        XCTAssertTrue(server.waitForConnection(beyond: 1, timeout: 5), "started again after the skip")

        XCTAssertEqual(control.exchange("stop\n"), "OK\n")
        XCTAssertTrue(control.exchange("status\n").contains("state: stop\n"))
        XCTAssertEqual(control.exchange("ping\n"), "OK\n", "the daemon still answers")
    }

    /// systemd's socket activation (Assets/systemd/musickitd.socket; issue #44: after `daemon
    /// stop`, MPD clients could not start the daemon): `systemd-socket-activate` holds both
    /// sockets as systemd would, mpc's first connection starts musickitd on them, and a daemon
    /// stopped leaves them in place for the next client.
    func testSocketActivationStartsTheDaemonForTheFirstMPDClient() throws {
        guard let activate = ["/usr/bin/systemd-socket-activate", "/bin/systemd-socket-activate"]
            .first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw XCTSkip("systemd-socket-activate is not installed (scripts/setup-system installs systemd)")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpc") else { throw XCTSkip("mpc is not installed") }
        let daemon = try XCTUnwrap(SystemPlayerDaemon.executable(), "musickitd beside the tests")
        try PrivateFiles.ensureDirectory(environment.runtimeDirectory)
        let playerSocket = SystemPlayerWire.socketURL(environment).path
        let mpdSocket = SystemPlayerWire.mpdSocketURL(environment).path
        var variables = ProcessInfo.processInfo.environment
        variables["MUSICKIT_CONFIG_DIR"] = environment.configDirectory.path
        variables["MUSICKIT_DATA_DIR"] = environment.dataDirectory.path
        variables["MUSICKIT_RUNTIME_DIR"] = environment.runtimeDirectory.path
        if let assets = environment.assetsDirectory { variables["MUSICKIT_ASSETS"] = assets.path }
        // Its launched program gets only the variables named with -E; it refuses names that are
        // not identifiers (bash's exported functions, BASH_FUNC_name%%, under scripts/test).
        let names = variables.keys.filter { name in
            !name.hasPrefix("LISTEN_") && name.first.map { $0 == "_" || $0.isLetter } == true
                && name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
        }
        let arguments = ["-l", playerSocket, "-l", mpdSocket] + names.sorted().flatMap { ["-E", $0] } + [daemon]
        // Not Foundation's Process: it reaps its children one at a time, and would wait on this
        // one (the daemon, once exec'd in its place) before it reaped mpc.
        let activator = try spawnProcess([activate] + arguments, environment: variables,
                                         outputPath: directory.appendingPathComponent("activate.log").path, newSession: false).get()
        var exited = false
        defer { if !exited { kill(activator, SIGTERM); var code: Int32 = 0; waitpid(activator, &code, 0) } }
        let deadline = Date(timeIntervalSinceNow: 5)
        while !FileManager.default.fileExists(atPath: mpdSocket) && Date() < deadline { usleep(10_000) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: SystemMusicPlayer.daemonLogURL(environment).path),
                       "no daemon before a client comes")

        let status = try runTool("/usr/bin/mpc", ["status"], environment: ["MPD_HOST": mpdSocket])
        XCTAssertEqual(status.code, 0, status.out)
        XCTAssertTrue(status.out.contains("repeat: off"), status.out)
        let pid = try XCTUnwrap(SystemMusicPlayer.runningDaemonProcessID(environment), "the daemon answers on the player's socket too")
        XCTAssertEqual(pid, activator, "systemd-socket-activate ran musickitd in its place")
        try SystemMusicPlayer(environment: environment).stopDaemon()
        var code: Int32 = 0
        XCTAssertEqual(waitpid(activator, &code, 0), activator)
        exited = true
        XCTAssertTrue(FileManager.default.fileExists(atPath: mpdSocket) && FileManager.default.fileExists(atPath: playerSocket),
                      "systemd's sockets stay for the next client")
    }

    func testTwoAppsControlAndObserveTheSamePlayback() async throws {
        let songs = try tones(3, frames: 176_400)
        let first = client()
        let second = client()
        first.queue = MusicPlayer.Queue(for: songs)
        try await first.play()
        await eventually("the second app to see playback") {
            second.state.playbackStatus == .playing && second.queue.currentEntry?.title == "Tone 1"
        } detail: { "\(second.state.playbackStatus) \(String(describing: second.queue.currentEntry))" }

        let observed = expectation(description: "the first app observes the pause the second made")
        withObservationTracking { _ = first.state.playbackStatus } onChange: { observed.fulfill() }
        second.pause()
        await fulfillment(of: [observed], timeout: 5)
        await eventually("paused") { first.state.playbackStatus == .paused } detail: {
            "first: \(first.state.playbackStatus), second: \(second.state.playbackStatus)"
        }

        try await first.play()
        await eventually("playing again, seen by the other app") { second.state.playbackStatus == .playing }
        // Let the resumed stream be heard before skipping: once in a full `scripts/test` run a
        // skip sent right after the resume never reached the next entry (see the closing note;
        // a skip racing a resume in the engine is the suspect), and nothing signals "heard again".
        try await Task.sleep(for: .milliseconds(300))
        try await second.skipToNextEntry()
        await eventually("the next entry, seen by both") {
            first.queue.currentEntry?.title == "Tone 2" && second.queue.currentEntry?.title == "Tone 2"
        } detail: {
            "first: \(first.state.playbackStatus) \(first.queue.currentEntry?.title ?? "-"), second: "
                + "\(second.state.playbackStatus) \(second.queue.currentEntry?.title ?? "-"); daemon log: "
                + ((try? String(contentsOf: SystemMusicPlayer.daemonLogURL(self.environment), encoding: .utf8)) ?? "")
        }
        XCTAssertGreaterThanOrEqual(first.playbackTime, 0)
        XCTAssertLessThan(first.playbackTime, 4)

        second.state.repeatMode = .all
        await eventually("the mode made in one app seen in the other") { first.state.repeatMode == .all }
    }

    /// Catalog songs play through the daemon (the system's music app) under the account's
    /// subscription rule, and not without a subscription.
    func testCatalogSongsFollowTheSubscriptionRule() async throws {
        try authorizeTestApp()
        let song = try await unwrapped(MusicCatalogResourceRequest<Song>(matching: \.id, equalTo: BundledCatalog.ezerEv)
            .response().items.first)
        let player = client()
        player.queue = [song]
        try await player.play()
        await eventually("the catalog song playing") {
            player.state.playbackStatus == .playing && player.queue.currentEntry?.title == song.title
        }
        player.stop()
        try setAccount { $0.isSubscribed = false }
        player.queue = [song]
        do {
            try await player.play()
            XCTFail("catalog content played without a subscription")
        } catch {
            XCTAssertTrue("\(error)".contains("subscription"), "\(error)")
        }
    }

    /// The daemon plays through the native PulseAudio output (MUSICKIT_AUDIO_DEVICE=pulseaudio:SINK)
    /// as through ALSA's plugin: the first song is heard after play(), the next one after a skip.
    func testTheDaemonPlaysAndSkipsThroughTheNativePulseAudioOutput() async throws {
        let device = try AudioTestEnvironment.requireNativePulse()
        setenv("MUSICKIT_AUDIO_DEVICE", device, 1)  // before the daemon starts; the teardown restores it
        let recorder = try SharedMonitor.recorder()
        let songs = try tones(2, frames: 176_400)  // 300 Hz, then 400 Hz, 4 s each
        let player = client()
        player.queue = MusicPlayer.Queue(for: songs)
        func heardFrequency() async throws -> Double {
            try await Task.sleep(for: .milliseconds(400))
            return SignalAnalysis.frequency(recorder.samples(after: monotonicNanoseconds() - 250_000_000), sampleRate: 44_100)
        }
        let pressed = monotonicNanoseconds()
        try await player.play()
        XCTAssertNotNil(recorder.firstSound(after: pressed, timeout: 2), "heard after play()")
        let first = try await heardFrequency()
        XCTAssertEqual(first, 300, accuracy: 20, "the first song")
        let streams = try runTool("/usr/bin/pactl", ["list", "sink-inputs"], environment: ProcessInfo.processInfo.environment).out
        XCTAssertTrue(streams.contains("application.name = \"OpenMusicKit\""), "a libpulse stream, not ALSA's plugin: \(streams)")
        try await player.skipToNextEntry()
        await eventually("the second song") { player.queue.currentEntry?.title == "Tone 2" }
        let second = try await heardFrequency()
        XCTAssertEqual(second, 400, accuracy: 20, "the second song, after the skip")
        XCTAssertEqual(player.state.playbackStatus, .playing)
    }

    /// The daemon keeps its queue, current entry, position and modes: killed outright, the next
    /// call starts a new one that resumes there.
    func testAKilledDaemonIsRestartedByTheNextCallAndResumesWhereItWas() async throws {
        let songs = try tones(3, frames: 88_200)
        let player = client()
        player.queue = MusicPlayer.Queue(for: songs, startingAt: songs[1])
        player.state.shuffleMode = .off
        player.state.repeatMode = .one
        player.playbackTime = 1.25
        try await player.play()
        player.pause()
        await eventually("paused on the second entry") {
            player.state.playbackStatus == .paused && player.queue.currentEntry?.title == "Tone 2"
        }
        let pid = try player.daemonProcessID()
        XCTAssertGreaterThan(pid, 0)
        let pausedAt = player.playbackTime
        XCTAssertEqual(pausedAt, 1.25, accuracy: 0.3, "paused just after the time it started at")
        let stateFile = environment.dataDirectory.appendingPathComponent("system-player.json")
        await eventually("the pause saved (the daemon writes its state after each change)") {
            guard let data = try? Data(contentsOf: stateFile),
                  let saved = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return false }
            return saved["current"] as? Int == 1 && abs((saved["time"] as? Double ?? 0) - pausedAt) < 0.05
        }
        XCTAssertEqual(kill(pid, SIGKILL), 0)
        await eventually("the daemon gone") { kill(pid, 0) != 0 }

        let after = client()
        XCTAssertNotEqual(try after.daemonProcessID(), pid, "a new daemon")
        await eventually("the restored current entry") { after.queue.currentEntry?.title == "Tone 2" }
        XCTAssertEqual(after.state.repeatMode, .one)
        XCTAssertEqual(after.playbackTime, 1.25, accuracy: 0.3, "where it was paused")
        try await after.play()
        await eventually("playing from there") { after.state.playbackStatus == .playing }
        XCTAssertEqual(after.queue.currentEntry?.title, "Tone 2")
    }

    /// SIGTERM stops the daemon cleanly (its state saved, its socket removed), also when the
    /// app that started it did so from a thread that blocks signals (as a task's thread does).
    func testSIGTERMStopsTheDaemonAndKeepsItsState() async throws {
        let player = client()
        player.queue = MusicPlayer.Queue(for: try tones(2))
        let pid = try player.daemonProcessID()
        try player.synchronize()
        XCTAssertEqual(kill(pid, SIGTERM), 0)
        await eventually("the daemon gone after SIGTERM") { kill(pid, 0) != 0 }
        XCTAssertFalse(FileManager.default.fileExists(atPath: SystemPlayerWire.socketURL(environment).path), "its socket removed")
        let stateFile = environment.dataDirectory.appendingPathComponent("system-player.json")
        let saved = try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any]
        XCTAssertEqual((saved?["parts"] as? [Any])?.isEmpty, false, "the queue saved")
    }

    /// A subscriber that stops reading (a suspended app) is dropped once its socket is full,
    /// and nobody waits for it: another client's 600 changes are each answered (issue #42: one
    /// such subscriber froze every wire and MPD client after 166 events).
    func testASubscriberThatStopsReadingIsDroppedAndNobodyWaitsForIt() async throws {
        let player = client()
        player.queue = MusicPlayer.Queue(for: try tones(1, frames: 441_000))
        try await player.play()
        let path = SystemPlayerWire.socketURL(environment).path
        let stalled = try SystemPlayerWire.connect(to: path)
        defer { close(stalled) }
        try SystemPlayerWire.send(["id": 1, "op": "hello", "args": ["subscribe": true]], on: stalled)
        let other = try SystemPlayerWire.connect(to: path)
        defer { close(other) }
        var limit = timeval(tv_sec: 5, tv_usec: 0)  // a frozen daemon fails the test instead of hanging it
        setsockopt(other, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        for round in 0..<600 {
            try SystemPlayerWire.send(["id": JSONValue(round), "op": "modes",
                                       "args": ["repeat": .string(round % 2 == 0 ? "all" : "none")]], on: other)
            let reply = try XCTUnwrap(try SystemPlayerWire.receive(on: other), "answer \(round)")
            XCTAssertEqual(reply["ok"]?.bool, true)
        }
        setsockopt(stalled, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var received = 0
        while true {
            let count = recv(stalled, &buffer, buffer.count, 0)
            if count <= 0 {
                XCTAssertEqual(count, 0, "the stalled subscriber's connection was closed, not left waiting")
                break
            }
            received += count
        }
        XCTAssertGreaterThan(received, 0, "it had its events up to when its socket filled")
    }

    /// A peer that does not speak the protocol gets an error or is dropped; playback goes on,
    /// and 50 peers at once are all answered.
    func testHostilePeersAreDroppedAndManyPeersAreServed() async throws {
        let player = client()
        player.queue = MusicPlayer.Queue(for: try tones(1, frames: 441_000))
        try await player.play()
        let path = SystemPlayerWire.socketURL(environment).path

        func raw(_ bytes: [UInt8]) throws -> [UInt8] {
            let socket = try SystemPlayerWire.connect(to: path)
            defer { close(socket) }
            _ = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(socket, Int32(SHUT_WR))
            var reply: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4_096)
            while true {
                let count = recv(socket, &buffer, buffer.count, 0)
                if count <= 0 { break }
                reply += buffer[0..<count]
            }
            return reply
        }
        let garbage = Array("this is not a message".utf8)
        let notJSON: [UInt8] = [0, 0, 0, 5] + Array("hello".utf8)
        let oversized: [UInt8] = [0x7F, 0xFF, 0xFF, 0xFF]
        let truncated: [UInt8] = [0, 0, 1, 0] + Array("{\"v\":1".utf8)
        let wrongVersion: [UInt8] = { let body = Array("{\"v\":99,\"op\":\"play\"}".utf8); return [0, 0, 0, UInt8(body.count)] + body }()
        for (name, bytes) in [("garbage", garbage), ("not JSON", notJSON), ("oversized", oversized),
                              ("truncated", truncated), ("another version", wrongVersion)] {
            let reply = String(decoding: try raw(bytes), as: UTF8.self)
            XCTAssertTrue(reply.isEmpty || reply.contains("\"ok\":false"), "\(name): \(reply)")
        }
        XCTAssertTrue(String(decoding: try raw(wrongVersion), as: UTF8.self).contains("version 99"))
        XCTAssertEqual(player.state.playbackStatus, .playing, "playback went on")

        let answered = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 50) { _ in
            guard let socket = try? SystemPlayerWire.connect(to: path) else { return }
            defer { close(socket) }
            if (try? SystemPlayerWire.send(["id": 1, "op": "state"], on: socket)) != nil,
               let reply = try? SystemPlayerWire.receive(on: socket), reply["ok"]?.bool == true {
                answered.withLock { $0 += 1 }
            }
        }
        XCTAssertEqual(answered.withLock { $0 }, 50)

        // Another user is refused even when the folder and the socket would let it in (as
        // root, the test opens them up and connects as nobody).
        if getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
            chmod(environment.runtimeDirectory.path, 0o755)
            chmod(path, 0o666)
            defer { chmod(environment.runtimeDirectory.path, 0o700); chmod(path, 0o600) }
            let script = """
                import socket, struct, json, sys
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
                body = json.dumps({"v": 1, "id": 1, "op": "state"}).encode()
                try:
                    s.sendall(struct.pack('>I', len(body)) + body)
                    print("answered" if s.recv(4) else "closed")
                except OSError:
                    print("closed")
                """
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, path]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(text, "closed\n", "a peer of another uid gets nothing")
        }
        let stat = try FileManager.default.attributesOfItem(atPath: path)
        XCTAssertEqual((stat[.posixPermissions] as? Int).map { $0 & 0o777 }, 0o600)
        XCTAssertEqual(player.state.playbackStatus, .playing)
    }
}

/// The system player's MPD protocol driven by the real `mpc` (Debian's), as a phone app or
/// ncmpcpp would: add, play, next, status, search, idle wake-ups, errors.
final class SystemPlayerMPDTests: XCTestCase {
    private var environment: MusicKitEnvironment!
    private var directory: URL!

    override func setUpWithError() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpc") else {
            throw XCTSkip("mpc is not installed (scripts/setup-system installs it)")
        }
        environment = try useTemporaryEnvironment(self)
        directory = try makeTemporaryDirectory(self)
        let device = try AudioTestEnvironment.requirePulse()
        let previous = ProcessInfo.processInfo.environment["MUSICKIT_AUDIO_DEVICE"]
        setenv("MUSICKIT_AUDIO_DEVICE", device, 1)
        let player = SystemMusicPlayer(environment: environment)
        _ = try player.daemonProcessID()  // started, with mpd.sock beside its socket
        addTeardownBlock {
            try? player.stopDaemon()
            if let previous { setenv("MUSICKIT_AUDIO_DEVICE", previous, 1) } else { unsetenv("MUSICKIT_AUDIO_DEVICE") }
        }
    }

    /// Runs mpc against the daemon's MPD socket; its exit code and output.
    @discardableResult
    private func mpc(_ arguments: String..., whileRunning: (() throws -> Void)? = nil) throws -> (code: Int32, out: String) {
        try runTool("/usr/bin/mpc", arguments, environment: ["MPD_HOST": SystemPlayerWire.mpdSocketURL(environment).path],
                    whileRunning: whileRunning)
    }

    /// `mpc volume` sets and reads the player's volume (MPD's `setvol`, `volume`, `getvol`,
    /// `status`), idle clients hear `mixer`, bad values are refused as MPD refuses them, and
    /// the daemon keeps the volume across a restart.
    func testMpcSetsTheVolumeAndTheDaemonKeepsIt() throws {
        let song = try XCTUnwrap(try GeneratedSongs.tones([440], frames: 441_000, into: directory).songs.first?.resource.string("filePath"))
        XCTAssertEqual(try mpc("add", song).code, 0)
        XCTAssertEqual(try mpc("play").code, 0)
        XCTAssertEqual(try mpc("volume").out, "volume:100%\n", "1 until set")
        let idler = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(idler.greeting().hasPrefix("OK MPD"))
        let woken = try mpc("volume", "50") {
            XCTAssertEqual(idler.exchange("idle mixer\n"), "changed: mixer\nOK\n", "an idle client hears the change")
        }
        XCTAssertEqual(woken.code, 0, woken.out)
        XCTAssertEqual(try mpc("volume").out, "volume: 50%\n")
        XCTAssertEqual(try mpc("volume", "+15").code, 0)
        XCTAssertEqual(try mpc("volume", "-5").code, 0)
        let mpd = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD"))
        XCTAssertEqual(mpd.exchange("getvol\n"), "volume: 60\nOK\n")
        XCTAssertTrue(mpd.exchange("status\n").contains("volume: 60\n"))
        XCTAssertEqual(mpd.exchange("setvol 101\n"), "ACK [2@0] {setvol} Invalid volume value\n")
        XCTAssertEqual(mpd.exchange("setvol loud\n"), "ACK [2@0] {setvol} Invalid volume value\n")
        XCTAssertEqual(mpd.exchange("volume +200\n"), "OK\n", "a change is clamped, as MPD clamps it")
        XCTAssertEqual(mpd.exchange("getvol\n"), "volume: 100\nOK\n")
        XCTAssertEqual(mpd.exchange("setvol 35\n"), "OK\n")

        let player = SystemMusicPlayer(environment: environment)
        try player.stopDaemon()
        _ = try player.daemonProcessID()
        XCTAssertEqual(try mpc("volume").out, "volume: 35%\n", "kept across a restart")
    }

    /// Stops the daemon and starts another (which restores the state the first saved); an MPD
    /// connection to the new one, greeted.
    private func restartedDaemon(file: StaticString = #filePath, line: UInt = #line) throws -> MPDSocket {
        let player = SystemMusicPlayer(environment: environment)
        try player.stopDaemon()
        _ = try player.daemonProcessID()
        let mpd = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD"), file: file, line: line)
        return mpd
    }

    /// MPD's `replay_gain_mode` sets the player's loudness normalization (off by default, as
    /// MPD's), `replay_gain_status` reads it, idle clients hear `options`, an unknown mode is
    /// refused as MPD refuses it, and the daemon keeps it across a restart.
    func testReplayGainModeIsSetReadAndKept() async throws {
        let mpd = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD"))
        XCTAssertEqual(mpd.exchange("replay_gain_status\n"), "replay_gain_mode: off\nOK\n")
        let idler = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(idler.greeting().hasPrefix("OK MPD"))
        _ = idler.exchange("idle options\n", until: { _ in true })  // sent; its answer comes with the change
        XCTAssertEqual(mpd.exchange("replay_gain_mode album\n"), "OK\n")
        XCTAssertEqual(idler.exchange("", until: { $0.hasSuffix("OK\n") }), "changed: options\nOK\n")
        XCTAssertEqual(mpd.exchange("replay_gain_status\n"), "replay_gain_mode: album\nOK\n")
        XCTAssertEqual(mpd.exchange("replay_gain_mode loud\n"), "ACK [2@0] {replay_gain_mode} Unrecognized replay gain mode\n")
        XCTAssertEqual(mpd.exchange("replay_gain_mode auto\n"), "OK\n")

        // An app sees it, and sets it for every client.
        let app = SystemMusicPlayer(environment: environment)
        await eventually("the app sees auto") { app.loudnessMode == .auto }
        app.loudnessMode = .track
        await eventually("MPD sees the app's track") { mpd.exchange("replay_gain_status\n") == "replay_gain_mode: track\nOK\n" }
        XCTAssertEqual(mpd.exchange("replay_gain_mode auto\n"), "OK\n")

        let again = try restartedDaemon()
        XCTAssertEqual(again.exchange("replay_gain_status\n"), "replay_gain_mode: auto\nOK\n", "kept across a restart")
    }

    /// MPD's protocol on 127.0.0.1 is off by default; `MUSICKIT_MPD_PORT` (or musickitd
    /// `--mpd-port`) turns it on, for clients that only speak TCP.
    func testMPDOverTCPIsOffByDefaultAndServesMpcOnTheGivenPort() throws {
        let probe = try SystemPlayerWire.listenOnLoopback(port: 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) }
        }
        close(probe)
        let port = UInt16(bigEndian: address.sin_port)
        func mpcTCP(_ arguments: String...) throws -> (code: Int32, out: String) {
            try runTool("/usr/bin/mpc", arguments, environment: ["MPD_HOST": "127.0.0.1", "MPD_PORT": "\(port)"])
        }
        XCTAssertNotEqual(try mpcTCP("status").code, 0, "this test's daemon does not listen on TCP")

        let other = MusicKitEnvironment(root: try makeTemporaryDirectory(self), assetsDirectory: MusicKitEnvironment.bundledAssets(),
                                        applicationIdentifier: "musickit-tests")
        let library = directory.appendingPathComponent("Music")
        try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
        try MusicLibraryScanner.setFolders([library], environment: other)
        setenv("MUSICKIT_MPD_PORT", "\(port)", 1)
        let player = SystemMusicPlayer(environment: other)
        defer { unsetenv("MUSICKIT_MPD_PORT") }
        _ = try player.daemonProcessID()  // started with the variable
        addTeardownBlock { try? player.stopDaemon() }
        let song = try XCTUnwrap(try GeneratedSongs.tones([440], frames: 22_050, into: library).songs.first?.resource.string("filePath"))
        XCTAssertEqual(try mpcTCP("add", song).code, 0)
        let listed = try mpcTCP("-f", "%title%", "playlist")
        XCTAssertEqual(listed.code, 0, listed.out)
        XCTAssertEqual(listed.out, "Tone 1\n")

        // Another local user may be behind the port: only the library's files (issue #42: it
        // told anyone which of the owner's files exist, and read their tags). Existing or not,
        // outside or reached through a link that leads outside: MPD's "Access denied".
        let outside = try XCTUnwrap(try GeneratedSongs.tones([550], frames: 22_050, into: directory).songs.first?.resource.string("filePath"))
        try FileManager.default.createSymbolicLink(atPath: library.appendingPathComponent("link.wav").path, withDestinationPath: outside)
        let mpd = try MPDSocket(port: port)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD"), "the greeting")
        for uri in [outside, "file://" + outside, library.appendingPathComponent("link.wav").path,
                    library.path + "/../" + URL(fileURLWithPath: outside).lastPathComponent, "/etc/passwd", "/no/such/file.flac"] {
            XCTAssertEqual(mpd.exchange("add \"\(uri)\"\n"), "ACK [4@0] {add} Access denied\n", uri)
        }
        XCTAssertEqual(mpd.exchange("add \"\(song)\"\n"), "OK\n", "inside the library's folders")
        XCTAssertEqual(try mpcTCP("playlist").out.split(separator: "\n").count, 2, "only the library's song was added, twice")
    }

    /// `add` takes regular audio files, answering as MPD 0.23 answers otherwise (issue #42: a
    /// directory, /dev/zero, a pipe or /etc/passwd were queued and answered OK).
    func testAddRefusesWhatIsNotARegularAudioFileAsMPDDoes() throws {
        let fifo = directory.appendingPathComponent("fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let text = directory.appendingPathComponent("notes.flac")
        try Data("not audio\n".utf8).write(to: text)
        let mpd = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD"), "the greeting")
        for uri in ["/etc/passwd", "/dev/zero", fifo, directory.path, "file://" + text.path, "relative.flac"] {
            XCTAssertEqual(mpd.exchange("add \"\(uri)\"\n"), "ACK [50@0] {add} No such song\n", uri)
        }
        XCTAssertEqual(mpd.exchange("add /no/such/file.flac\n"),
                       "ACK [52@0] {add} Failed to access /no/such/file.flac: No such file or directory\n")
        XCTAssertTrue(mpd.exchange("status\n").contains("playlistlength: 0\n"), "nothing was queued")
    }

    func testMpcAddsPlaysSkipsSearchesAndWakesFromIdle() throws {
        let songs = try GeneratedSongs.tones([440, 550, 660], frames: 176_400, into: directory).songs
        for song in songs { XCTAssertEqual(try mpc("add", try XCTUnwrap(song.resource.string("filePath"))).code, 0) }
        XCTAssertEqual(try mpc("add", "musickit:\(BundledCatalog.ezerEv.rawValue)").code, 0, "a catalog ID")
        XCTAssertEqual(try mpc("-f", "%title%", "playlist").out, "Tone 1\nTone 2\nTone 3\nEzer Év\n")

        let played = try mpc("play")
        XCTAssertEqual(played.code, 0, played.out)
        XCTAssertTrue(played.out.contains("[playing] #1/4"), played.out)
        let skipped = try mpc("next")
        XCTAssertTrue(skipped.out.hasPrefix("Test Artist - Tone 2\n[playing] #2/4"), skipped.out)
        XCTAssertEqual(SystemMusicPlayer(environment: environment).queue.currentEntry?.title, "Tone 2",
                       "what mpc did, SystemMusicPlayer sees")

        XCTAssertEqual(try mpc("-f", "%title%", "search", "title", "ezer").out, "Ezer Év\n")
        XCTAssertTrue(try mpc("list", "artist").out.contains("Obsidian Shell\n"))

        // idle wakes when another client pauses.
        let idle = try mpc("idle", "player") {
            Thread.sleep(forTimeInterval: 0.3)
            try self.mpc("pause")
        }
        XCTAssertEqual(idle.out, "player\n")
        XCTAssertTrue(try mpc("status").out.contains("[paused]"))

        XCTAssertEqual(try mpc("del", "1").code, 0)
        XCTAssertEqual(try mpc("-f", "%title%", "playlist").out, "Tone 2\nTone 3\nEzer Év\n")
        let missing = try mpc("add", "/no/such/file.flac")
        XCTAssertNotEqual(missing.code, 0)
        XCTAssertTrue(missing.out.contains("No such file"), missing.out)
        XCTAssertEqual(try mpc("clear").code, 0)
        XCTAssertEqual(try mpc("playlist").out, "")
    }

    /// Times no song has (issue #42: each crashed the daemon): a time that is not a finite
    /// number is refused with MPD's "Number expected"; a finite one past the song's end moves
    /// to its end, so the next song plays; the daemon answers `status` all along.
    func testTimesThatAreNotFiniteAreRefusedAndHugeOnesEndTheSong() throws {
        let songs = try GeneratedSongs.tones([440, 550], frames: 176_400, into: directory).songs
        for song in songs { XCTAssertEqual(try mpc("add", try XCTUnwrap(song.resource.string("filePath"))).code, 0) }
        XCTAssertEqual(try mpc("play").code, 0)
        let mpd = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD"), "the greeting")
        for time in ["inf", "-inf", "nan", "1e999"] {
            XCTAssertEqual(mpd.exchange("seekcur \(time)\n"), "ACK [2@0] {seekcur} Number expected\n", time)
            XCTAssertEqual(mpd.exchange("seek 0 \(time)\n"), "ACK [2@0] {seek} Number expected\n", time)
        }
        XCTAssertEqual(mpd.exchange("seekcur 1e15\n"), "OK\n")
        let deadline = Date(timeIntervalSinceNow: 5)
        var status = ""
        repeat {
            status = mpd.exchange("status\n")
        } while !status.contains("song: 1\n") && Date() < deadline
        XCTAssertTrue(status.contains("song: 1\n"), "past the end of the first song, the second plays: \(status)")
        XCTAssertTrue(status.contains("elapsed: "), status)
        XCTAssertFalse(status.contains("inf") || status.contains("nan"), status)
        XCTAssertEqual(mpd.exchange("seekcur 1e300\n"), "OK\n")
        XCTAssertTrue(mpd.exchange("status\n").hasSuffix("OK\n"), "the daemon still answers")
        XCTAssertEqual(try mpc("status").code, 0, "and so does every other client")
    }

    /// Repeat over a queue with nothing playable (issue #42: the daemon spun at 100 % and
    /// answered no one): `play` answers, the daemon stays stopped and answers every client.
    func testRepeatOverNothingPlayableLeavesTheDaemonAnswering() throws {
        XCTAssertEqual(try mpc("repeat", "on").code, 0)
        let missing = directory.appendingPathComponent("gone.flac")
        let songs = try GeneratedSongs.tones([440], frames: 4_410, into: directory).songs
        let path = try XCTUnwrap(songs.first?.resource.string("filePath"))
        XCTAssertEqual(try mpc("add", path).code, 0)
        try FileManager.default.copyItem(atPath: path, toPath: missing.path)
        XCTAssertEqual(try mpc("add", missing.path).code, 0)
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.removeItem(at: missing)  // both gone, as with an unplugged disk
        _ = try mpc("play")
        let status = try mpc("status")
        XCTAssertEqual(status.code, 0, status.out)
        XCTAssertFalse(status.out.contains("[playing]"), status.out)
        XCTAssertEqual(try mpc("repeat", "off").code, 0, "another command is answered too")
    }

    /// The limits a flooding client meets (issue #42): a command list past 2 MiB ends its
    /// connection, as MPD's does; connections past 100 are closed on arrival; a frame's header
    /// alone reserves no 4 MiB; 1,000 `add`s rewrite the state file a few times, not 1,000
    /// (it was 2.56 GB for 3,000). Another client is answered throughout.
    func testAFloodingClientMeetsDocumentedLimitsAndOthersAreStillAnswered() throws {
        let mpdPath = SystemPlayerWire.mpdSocketURL(environment).path
        let daemon = try SystemMusicPlayer(environment: environment).daemonProcessID()
        func daemonFigure(_ file: String, _ key: String) throws -> Int {
            let text = try String(contentsOfFile: "/proc/\(daemon)/\(file)", encoding: .utf8)
            let line = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix(key) })
            return try XCTUnwrap(Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? ""))
        }

        // 1,000 adds in one list: a state file of ~1,000 entries is written a few times.
        let path = try XCTUnwrap(try GeneratedSongs.tones([440], frames: 4_410, into: directory).songs.first?.resource.string("filePath"))
        let adder = try MPDSocket(path: mpdPath)
        _ = adder.greeting()
        let writtenBefore = try daemonFigure("io", "wchar:")
        let adds = String(repeating: "add \"\(path)\"\n", count: 1_000)
        XCTAssertEqual(adder.exchange("command_list_begin\n" + adds + "command_list_end\n"), "OK\n")
        let stateFile = environment.dataDirectory.appendingPathComponent("system-player.json")
        var saved = 0
        let deadline = Date(timeIntervalSinceNow: 10)
        repeat {
            let data = (try? Data(contentsOf: stateFile)) ?? Data()
            saved = data.count
            let entries = (try? JSONValue.parse(data))?["parts"]?.array?.reduce(0) { $0 + ($1["entries"]?.array?.count ?? 0) }
            if entries == 1_000 { break }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        let written = try daemonFigure("io", "wchar:") - writtenBefore
        XCTAssertGreaterThan(saved, 100_000, "the 1,000 entries were saved")
        // Coalesced: ~2 writes of the file here; one write per add: 26 times the file.
        XCTAssertLessThan(written, saved * 10, "\(written) bytes written for a state file of \(saved): coalesced, not one write per add")

        // A command list past 2 MiB: the connection ends, as MPD ends it.
        let lister = try MPDSocket(path: mpdPath)
        _ = lister.greeting()
        let flood = "command_list_begin\n" + String(repeating: "ping\n", count: (MPDProtocolServer.maximumCommandListBytes / 5) + 10)
        XCTAssertEqual(lister.exchange(flood, until: { _ in false }), "", "closed without an answer")

        // Frame headers that promise 4 MiB each and send nothing more.
        let residentBefore = try daemonFigure("status", "VmRSS:")
        var promises: [Int32] = []
        for _ in 0..<50 {
            let socket = try SystemPlayerWire.connect(to: SystemPlayerWire.socketURL(environment).path)
            let header: [UInt8] = [0x00, 0x40, 0x00, 0x00]  // 4 MiB
            _ = header.withUnsafeBytes { send(socket, $0.baseAddress!, 4, Int32(MSG_NOSIGNAL)) }
            promises.append(socket)
        }
        let other = try MPDSocket(path: mpdPath)
        _ = other.greeting()
        XCTAssertTrue(other.exchange("status\n").contains("playlistlength: 1000\n"), "another client is answered")
        let grownKiB = try daemonFigure("status", "VmRSS:") - residentBefore
        XCTAssertLessThan(grownKiB, 50 * 1_024, "50 headers reserved \(grownKiB) KiB (4 MiB each before)")
        promises.forEach { close($0) }

        // Past 100 connections at once, a new one is closed on arrival; once some leave, served.
        var open: [MPDSocket] = [adder, lister, other]
        while open.count < ConnectionAcceptors.defaultMaximumConnections {
            let connection = try MPDSocket(path: mpdPath)
            XCTAssertTrue(connection.greeting().hasPrefix("OK MPD"), "connection \(open.count + 1)")
            open.append(connection)
        }
        _ = open.remove(at: 1)  // the lister, already closed by the daemon
        let extra = try MPDSocket(path: mpdPath)
        XCTAssertTrue(extra.greeting().hasPrefix("OK MPD"), "the 100th")
        let refused = try MPDSocket(path: mpdPath)
        XCTAssertEqual(refused.exchange("", until: { _ in false }), "", "the 101st is closed on arrival")
        open.removeAll()
        let deadlineForRoom = Date(timeIntervalSinceNow: 5)
        var greeting = ""
        repeat {
            greeting = try MPDSocket(path: mpdPath).greeting()
        } while !greeting.hasPrefix("OK MPD") && Date() < deadlineForRoom
        XCTAssertTrue(greeting.hasPrefix("OK MPD"), "served again once the others left")
    }

    /// `idle` answers at once with what changed since the client's last `idle`, changes made
    /// between its commands included, and then forgets every change, as MPD 0.23 does (issue
    /// #44: ncmpcpp sends `status`, then `idle`, and waited for good, showing the old song);
    /// `noidle` outside `idle` is ignored.
    func testIdleAnswersChangesMadeBetweenCommandsAndNoidleAloneIsIgnored() throws {
        let path = try XCTUnwrap(try GeneratedSongs.tones([440], frames: 4_410, into: directory).songs.first?.resource.string("filePath"))
        let client = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(client.greeting().hasPrefix("OK MPD"), "the greeting")
        XCTAssertTrue(client.exchange("status\n").hasSuffix("OK\n"))
        XCTAssertEqual(try mpc("add", path).code, 0, "another client changes the playlist")
        XCTAssertEqual(try mpc("repeat", "on").code, 0, "and the options")
        XCTAssertEqual(client.exchange("idle playlist\n"), "changed: playlist\nOK\n", "at once, what changed meanwhile")
        XCTAssertEqual(client.exchange("idle options\nnoidle\n"), "OK\n", "the rest was forgotten with the answer, as in MPD")
        XCTAssertEqual(try mpc("repeat", "off").code, 0)
        XCTAssertEqual(client.exchange("idle options\n"), "changed: options\nOK\n", "a new change is answered at once")
        XCTAssertEqual(client.exchange("noidle\nping\n"), "OK\n", "noidle alone: no answer, as MPD (only ping's OK)")
        XCTAssertEqual(client.exchange("idle playlist\nnoidle\n"), "OK\n", "nothing new: noidle ends the wait")
    }

    /// `outputs` names the device the stream is open on and its kind (issue #44: `plugin: alsa`
    /// while playing through libpulse); `tagtypes` lists the tags songs are described with.
    func testOutputsNamesTheDeviceAndTagtypesTheTagsSongsCarry() throws {
        let device = try AudioTestEnvironment.requirePulse()
        let mpd = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD"), "the greeting")
        let outputs = mpd.exchange("outputs\n")
        XCTAssertTrue(outputs.contains("outputname: \(device)\n"), outputs)
        XCTAssertTrue(outputs.contains("plugin: \(device.hasPrefix("pulseaudio") ? "pulse" : "alsa")\n"), outputs)
        XCTAssertEqual(mpd.exchange("tagtypes\n"), ["Artist", "AlbumArtist", "Album", "Title", "Track", "Date", "Genre", "Disc"]
            .map { "tagtype: \($0)\n" }.joined() + "OK\n")
        let song = ResourceObject(id: "1", type: "songs", href: nil, attributes: [
            "name": "Halo", "artistName": "Ripper", "albumName": "Ripped", "trackNumber": 4, "discNumber": 2,
            "releaseDate": "2019-03-01", "durationInMillis": 61_500])
        XCTAssertEqual(MPDProtocolServer.describe(song), """
            file: musickit:1
            Title: Halo
            Artist: Ripper
            Album: Ripped
            Track: 4
            Disc: 2
            Date: 2019-03-01
            Time: 62
            duration: 61.500

            """)
    }

    /// `repeat` and `single` are independent, as in MPD (issue #44: `single on` turned repeat
    /// on): `single` alone pauses after the song at the start of the next, where `play` goes
    /// on (MPD 0.23 answers `state: pause`, the next song, elapsed 0); both repeat the song; a
    /// restarted daemon keeps them.
    func testSingleAndRepeatAreIndependentAndSingleAlonePausesAfterTheSong() throws {
        let songs = try GeneratedSongs.tones([440, 550, 660], frames: 22_050, into: directory).songs
        for song in songs { XCTAssertEqual(try mpc("add", try XCTUnwrap(song.resource.string("filePath"))).code, 0) }
        let mpd = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD"), "the greeting")
        func modes() -> String {
            mpd.exchange("status\n").split(separator: "\n").filter { $0.hasPrefix("repeat:") || $0.hasPrefix("single:") }.joined(separator: " ")
        }
        XCTAssertEqual(mpd.exchange("single 1\n"), "OK\n")
        XCTAssertEqual(modes(), "repeat: 0 single: 1", "single does not turn repeat on")
        XCTAssertEqual(mpd.exchange("play 0\n"), "OK\n")
        let deadline = Date(timeIntervalSinceNow: 5)
        var status = ""
        repeat {
            usleep(20_000)
            status = mpd.exchange("status\n")
        } while !status.contains("state: pause\n") && Date() < deadline
        XCTAssertTrue(status.contains("state: pause\n") && status.contains("song: 1\n"), "paused at the next song: \(status)")
        XCTAssertTrue(status.contains("elapsed: 0.000\n"), status)
        XCTAssertEqual(mpd.exchange("play\n"), "OK\n")
        XCTAssertTrue(mpd.exchange("status\n").contains("song: 1\n"), "play goes on at the next song")
        XCTAssertEqual(mpd.exchange("next\n"), "OK\n", "next skips as usual")
        XCTAssertTrue(mpd.exchange("status\n").contains("state: play\nsong: 2\n"))
        XCTAssertEqual(mpd.exchange("repeat 1\n"), "OK\n")
        XCTAssertEqual(modes(), "repeat: 1 single: 1")
        XCTAssertEqual(mpd.exchange("single 0\n"), "OK\n")
        XCTAssertEqual(modes(), "repeat: 1 single: 0", "single off leaves repeat on")
        XCTAssertEqual(mpd.exchange("command_list_begin\nrepeat 0\nsingle 1\ncommand_list_end\n"), "OK\n")

        // Kept by a restarted daemon.
        let restored = try restartedDaemon().exchange("status\n")
        XCTAssertTrue(restored.contains("repeat: 0\n") && restored.contains("single: 1\n"), restored)
    }

    /// What ncmpcpp's Browse, Search and Media library screens ask (issue #44): `lsinfo` walks
    /// the library's folders; `find`/`search` answer in MPD's database order (folder, then file:
    /// an album in track order, not by title); `list` honours its filter and `group`;
    /// `findadd`/`searchadd` queue what they find, in that order.
    func testLibraryIsBrowsedFoundListedAndAddedInDatabaseOrder() throws {
        let music = directory.appendingPathComponent("Music")
        func song(_ path: String, title: String, artist: String, album: String, track: Int) throws {
            let url = music.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let writer = try AudioFileWriter(path: url.path, format: .flac16, sampleRate: 44_100, channelCount: 2,
                                             tags: .init(title: title, artist: artist, album: album, trackNumber: track))
            try writer.write([Float](repeating: 0.25, count: 4_410 * 2))
            try writer.close()
        }
        // Titles against track order: title order would put Arctic first.
        try song("The Breeze/Weather/1 - Zephyr.flac", title: "Zephyr", artist: "The Breeze", album: "Weather", track: 1)
        try song("The Breeze/Weather/2 - Arctic.flac", title: "Arctic", artist: "The Breeze", album: "Weather", track: 2)
        try song("Éclair/Night Lights/1 - Lantern.flac", title: "Lantern", artist: "Éclair", album: "Night Lights", track: 1)
        try MusicAuthorizationSettings.set(.authorized, for: environment.applicationIdentifier)
        try MusicLibraryScanner.setFolders([music])
        _ = try MusicLibraryScanner.scan()
        let root = music.standardizedFileURL.path

        let mpd = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD"), "the greeting")
        func files(_ reply: String) -> [String] {
            reply.split(separator: "\n").filter { $0.hasPrefix("file: ") }.map { String($0.dropFirst(6).split(separator: "/").last!) }
        }
        // Directories relative to the library's one folder, as MPD's to its music directory
        // (libmpdclient, so ncmpcpp's Browse, refuses one starting with "/").
        XCTAssertEqual(mpd.exchange("lsinfo \"\"\n"), "directory: Éclair\ndirectory: The Breeze\nOK\n")
        XCTAssertEqual(mpd.exchange("lsinfo \"The Breeze\"\n"), "directory: The Breeze/Weather\nOK\n")
        let album = mpd.exchange("lsinfo \"The Breeze/Weather\"\n")
        XCTAssertEqual(files(album), ["1 - Zephyr.flac", "2 - Arctic.flac"], album)
        XCTAssertTrue(album.contains("file: \(root)/The Breeze/Weather/1 - Zephyr.flac\nTitle: Zephyr\nArtist: The Breeze\nAlbum: Weather\n"),
                      album)
        XCTAssertEqual(mpd.exchange("lsinfo \"/etc\"\n"), "ACK [50@0] {lsinfo} No such directory\n")
        XCTAssertEqual(mpd.exchange("lsinfo \"The Breeze/../..\"\n"), "ACK [50@0] {lsinfo} No such directory\n")
        XCTAssertTrue(mpd.exchange("decoders\n").hasPrefix("plugin: musickit\nsuffix: "), "ncmpcpp asks at each connection")

        XCTAssertEqual(files(mpd.exchange("find album Weather\n")), ["1 - Zephyr.flac", "2 - Arctic.flac"])
        XCTAssertEqual(files(mpd.exchange("search artist breeze\n")), ["1 - Zephyr.flac", "2 - Arctic.flac"])
        XCTAssertEqual(mpd.exchange("list album artist \"The Breeze\"\n"), "Album: Weather\nOK\n", "the filter is honoured")
        XCTAssertEqual(mpd.exchange("list album \"Éclair\"\n"), "Album: Night Lights\nOK\n", "MPD's older list album ARTIST")
        XCTAssertEqual(mpd.exchange("list title albumartist \"The Breeze\"\n"), "Title: Arctic\nTitle: Zephyr\nOK\n",
                       "AlbumArtist falls back to the artist")
        let grouped = mpd.exchange("list album group artist\n")
        XCTAssertTrue(grouped.contains("Artist: The Breeze\nAlbum: Weather\n") && grouped.contains("Artist: Éclair\nAlbum: Night Lights\n"),
                      grouped)
        XCTAssertEqual(mpd.exchange("find \"(artist == 'x')\"\n"),
                       "ACK [2@0] {find} filter expressions are not supported; give TYPE VALUE pairs\n")

        XCTAssertEqual(files(mpd.exchange("find album Weather date \"\"\n")), ["1 - Zephyr.flac", "2 - Arctic.flac"],
                       "an empty value is a tag the songs lack (ncmpcpp's media library asks so)")
        XCTAssertEqual(mpd.exchange("findadd album Weather\n"), "OK\n")
        XCTAssertEqual(mpd.exchange("searchadd title lant\n"), "OK\n")
        XCTAssertEqual(try mpc("-f", "%title%", "playlist").out, "Zephyr\nArctic\nLantern\n")

        // The library's playlists are MPD's stored playlists; stats counts library and catalog.
        let arctic = try XCTUnwrap(try waitFor { () -> [Song] in
            var request = MusicLibraryRequest<Song>()
            request.filter(matching: \.title, equalTo: "Arctic")
            return Array(try await request.response().items)
        }.first)
        _ = try waitFor { try await MusicLibrary.shared.createPlaylist(name: "Rainy", items: [arctic]) }
        XCTAssertTrue(mpd.exchange("listplaylists\n").hasPrefix("playlist: Rainy\n"))
        XCTAssertEqual(mpd.exchange("load Rainy\n"), "OK\n")
        XCTAssertEqual(mpd.exchange("load Sunny\n"), "ACK [50@0] {load} No such playlist\n")
        XCTAssertEqual(try mpc("-f", "%title%", "playlist").out, "Zephyr\nArctic\nLantern\nArctic\n")
        let stats = mpd.exchange("stats\n")
        let songCount = try XCTUnwrap(stats.split(separator: "\n").first { $0.hasPrefix("songs: ") }.flatMap { Int($0.dropFirst(7)) })
        XCTAssertGreaterThan(songCount, 3, "the library's three and the catalog's: \(stats)")
        XCTAssertTrue(stats.contains("uptime: ") && stats.contains("db_playtime: "), stats)
    }

    /// MPD's own framing, spoken by hand: the greeting, command lists, and ACK for the rest.
    func testTheProtocolGreetsListsAndAcknowledgesErrorsAsMPDDoes() throws {
        let mpd = try MPDSocket(path: SystemPlayerWire.mpdSocketURL(environment).path)
        XCTAssertTrue(mpd.greeting().hasPrefix("OK MPD 0.23"), "the greeting")
        XCTAssertEqual(mpd.exchange("ping\n"), "OK\n")
        XCTAssertEqual(mpd.exchange("command_list_ok_begin\nping\nrepeat 1\ncommand_list_end\n"), "list_OK\nlist_OK\nOK\n")
        XCTAssertEqual(mpd.exchange("frobnicate\n"), "ACK [5@0] {frobnicate} unknown command \"frobnicate\"\n")
        XCTAssertEqual(mpd.exchange("command_list_begin\nping\nplay 99\ncommand_list_end\n"), "ACK [2@1] {play} Bad song index\n")
        XCTAssertTrue(mpd.exchange("status\n").contains("repeat: 1\n"))
        // Positions past 32 bits, as MPD 0.23 answers them (the protocol fuzzer's finding: the
        // daemon trapped on `playlistinfo 9223372036854775807`).
        for (line, text) in [("playlistinfo 9223372036854775807", "9223372036854775807"), ("move 9223372036854775807 +5", "9223372036854775807"),
                             ("delete 9223372036854775807:", "9223372036854775807:"), ("playlistinfo 2147483648", "2147483648"),
                             ("delete 0:99999999999999999999", "0:99999999999999999999")] {
            let command = String(line.prefix { $0 != " " })
            XCTAssertEqual(mpd.exchange(line + "\n"), "ACK [2@0] {\(command)} Number too large: \(text)\n", line)
        }
        XCTAssertEqual(mpd.exchange("playlistinfo 5\n"), "ACK [2@0] {playlistinfo} Bad song index\n")
        XCTAssertTrue(mpd.exchange("status\n").hasSuffix("OK\n"), "still answering")
    }
}

/// An answer another thread fills in.
private final class PendingAnswer: Sendable {
    let text = Mutex<String?>(nil)
}
