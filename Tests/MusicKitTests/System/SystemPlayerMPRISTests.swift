import AudioMeasurement
import AudioTestSupport
import Foundation
import Glibc
@testable import MusicKitCore
@testable import MusicKitDaemon
import Synchronization
import XCTest

/// musickitd's MPRIS interface, driven and watched by the real `playerctl` on a private session
/// bus (a `dbus-daemon` this test starts and stops by its PID), playing to the test sink.
final class SystemPlayerMPRISTests: XCTestCase {
    private var environment: MusicKitEnvironment!
    private var directory: URL!
    private var busAddress = ""

    override func setUpWithError() throws {
        for tool in ["/usr/bin/playerctl", "/usr/bin/dbus-daemon"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw XCTSkip("\(tool) is not installed (scripts/setup-system installs it)")
        }
        environment = try useTemporaryEnvironment(self)
        directory = try makeTemporaryDirectory(self)
        let device = try AudioTestEnvironment.requirePulse()

        let bus = Process()
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        bus.arguments = ["--session", "--nofork", "--nopidfile", "--print-address=1",
                         "--address=unix:path=\(directory.appendingPathComponent("bus").path)"]
        let out = Pipe()
        bus.standardOutput = out
        bus.standardError = FileHandle.nullDevice  // not the test's: a bus left behind would hold `swift test`'s pipe open
        try bus.run()
        var printed = Data()
        while !printed.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed.append(chunk)
        }
        busAddress = String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(busAddress.hasPrefix("unix:"), "dbus-daemon printed \(busAddress)")

        let saved = ["MUSICKIT_AUDIO_DEVICE", "DBUS_SESSION_BUS_ADDRESS"].map { ($0, ProcessInfo.processInfo.environment[$0]) }
        setenv("MUSICKIT_AUDIO_DEVICE", device, 1)
        setenv("DBUS_SESSION_BUS_ADDRESS", busAddress, 1)  // the daemon started on demand inherits it
        let player = SystemMusicPlayer(environment: environment)
        _ = try player.daemonProcessID()
        addTeardownBlock {
            try? player.stopDaemon()
            kill(bus.processIdentifier, SIGKILL)
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
    }

    @discardableResult
    private func playerctl(_ arguments: String...) throws -> (code: Int32, out: String) {
        try runTool("/usr/bin/playerctl", ["--player=musickit"] + arguments, environment: ["DBUS_SESSION_BUS_ADDRESS": busAddress])
    }

    private func waitForTheBusName() async throws {
        let listed = await eventually("musickitd's name on the session bus") {
            (try? runTool("/usr/bin/playerctl", ["--list-all"], environment: ["DBUS_SESSION_BUS_ADDRESS": busAddress]).out)?
                .split(separator: "\n").contains("musickit") == true
        } detail: { (try? String(contentsOf: SystemMusicPlayer.daemonLogURL(self.environment), encoding: .utf8)) ?? "" }
        if !listed { throw XCTSkip("musickitd did not appear on the bus") }
    }

    func testPlayerctlControlsThePlayerAndReadsWhatPlays() async throws {
        let songs = try GeneratedSongs.tones([440, 550, 660, 770], frames: 441_000, into: directory).songs  // 10 s each
        let app = SystemMusicPlayer(environment: environment)
        app.queue = MusicPlayer.Queue(for: Array(songs.prefix(3)))
        try await waitForTheBusName()
        XCTAssertEqual(try playerctl("status").out, "Stopped\n")
        let introspection = try runTool("/usr/bin/dbus-send", ["--bus=\(busAddress)", "--print-reply", "--dest=org.mpris.MediaPlayer2.musickit",
                                                                "/org/mpris/MediaPlayer2", "org.freedesktop.DBus.Introspectable.Introspect"],
                                        environment: [:]).out
        for line in ["<property name=\"LoopStatus\" type=\"s\" access=\"readwrite\"/>",
                     "<property name=\"Metadata\" type=\"a{sv}\" access=\"read\"/>",
                     "<property name=\"SupportedUriSchemes\" type=\"as\" access=\"read\"/>", "<method name=\"OpenUri\">"] {
            XCTAssertTrue(introspection.contains(line), "\(line) in \(introspection)")
        }

        XCTAssertEqual(try playerctl("play").code, 0)
        await eventually("playing, as the app sees it") { app.state.playbackStatus == .playing }
        XCTAssertEqual(try playerctl("status").out, "Playing\n")
        let path = try XCTUnwrap(songs[0].resource.string("filePath"))
        let metadata = try playerctl("metadata", "--format", "{{xesam:title}}|{{xesam:artist}}|{{mpris:length}}|{{xesam:url}}|{{mpris:trackid}}").out
        XCTAssertTrue(metadata.hasPrefix("Tone 1|Test Artist|10000000|\(URL(fileURLWithPath: path).absoluteString)|'/org/musickit/track/"),
                      metadata)

        XCTAssertEqual(try playerctl("next").code, 0)
        XCTAssertEqual(try playerctl("metadata", "title").out, "Tone 2\n", "Next returns when the next entry is heard")
        await eventually("the app sees the skip") { app.queue.currentEntry?.title == "Tone 2" }

        XCTAssertEqual(try playerctl("pause").code, 0)
        await eventually("paused") { app.state.playbackStatus == .paused }
        XCTAssertEqual(try playerctl("status").out, "Paused\n")
        XCTAssertEqual(try playerctl("position", "4").code, 0, "SetPosition on the current track")
        await eventually("at 4 s") { abs(app.playbackTime - 4) < 0.2 } detail: { "\(app.playbackTime)" }
        XCTAssertEqual(Double(try playerctl("position").out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, 4, accuracy: 0.2)
        XCTAssertEqual(try playerctl("position", "1.5-").code, 0, "Seek back by 1.5 s")
        await eventually("at 2.5 s") { abs(app.playbackTime - 2.5) < 0.2 } detail: { "\(app.playbackTime)" }

        XCTAssertEqual(try playerctl("loop", "Playlist").code, 0)
        await eventually("repeat all") { app.state.repeatMode == .all }
        XCTAssertEqual(try playerctl("loop").out, "Playlist\n")
        XCTAssertEqual(try playerctl("shuffle", "On").code, 0)
        await eventually("shuffle") { app.state.shuffleMode == .songs }
        XCTAssertEqual(try playerctl("shuffle").out, "On\n")
        XCTAssertEqual(try playerctl("shuffle", "Off").code, 0)
        await eventually("shuffle off") { app.state.shuffleMode == .off }

        XCTAssertEqual(try playerctl("previous").code, 0, "under 3 s in: the previous entry (paused: at once)")
        XCTAssertEqual(try playerctl("metadata", "title").out, "Tone 1\n")

        XCTAssertEqual(try playerctl("status").out, "Paused\n")
        let fourth = try XCTUnwrap(songs[3].resource.string("filePath"))
        XCTAssertEqual(try playerctl("open", URL(fileURLWithPath: fourth).absoluteString).code, 0)
        XCTAssertEqual(try playerctl("metadata", "title").out, "Tone 4\n", "OpenUri plays the file at once")
        XCTAssertEqual(try playerctl("status").out, "Playing\n")
        XCTAssertEqual(try playerctl("open", "musickit:\(BundledCatalog.ezerEv.rawValue)").code, 0)
        XCTAssertEqual(try playerctl("metadata", "--format", "{{title}}|{{artist}}|{{album}}").out, "Ezer Év|Obsidian Shell|Elysia\n")
        let art = try XCTUnwrap(URL(string: try playerctl("metadata", "mpris:artUrl").out.trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertTrue(art.isFileURL && FileManager.default.fileExists(atPath: art.path), "the bundled artwork's file: \(art)")

        let missing = try playerctl("open", "file:///nonexistent/song.flac")
        XCTAssertNotEqual(missing.code, 0)
        XCTAssertTrue(missing.out.contains("Failed to access /nonexistent/song.flac: No such file or directory"), missing.out)
        let notAudio = try playerctl("open", "file:///etc/passwd")
        XCTAssertNotEqual(notAudio.code, 0, "not an audio file: refused, as by MPD's add")
        XCTAssertTrue(notAudio.out.contains("No such song"), notAudio.out)
        XCTAssertEqual(try playerctl("metadata", "title").out, "Ezer Év\n", "nothing changed")

        XCTAssertEqual(try playerctl("stop").code, 0)
        await eventually("stopped") { app.state.playbackStatus == .stopped }
        XCTAssertEqual(try playerctl("status").out, "Stopped\n")
    }

    /// MPRIS `Volume`: playerctl sets and reads it, an app sees it, and a follower hears a
    /// change the app makes (`PropertiesChanged`).
    func testPlayerctlSetsTheVolumeAndFollowersHearAnAppsChange() async throws {
        let songs = try GeneratedSongs.tones([440], frames: 441_000, into: directory).songs
        let app = SystemMusicPlayer(environment: environment)
        app.queue = MusicPlayer.Queue(for: songs)
        try await app.play()
        try await waitForTheBusName()
        XCTAssertEqual(Double(try playerctl("volume").out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, 1, accuracy: 0.001)
        XCTAssertEqual(try playerctl("volume", "0.4").code, 0)
        XCTAssertEqual(Double(try playerctl("volume").out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, 0.4, accuracy: 0.001)
        await eventually("the app sees 0.4") { abs(app.volume - 0.4) < 0.001 } detail: { "\(app.volume)" }

        let volumes = try Follower(["--player=musickit", "--follow", "volume"], bus: busAddress)
        defer { volumes.stop() }
        app.volume = 0.25
        await eventually("0.25 followed") {
            volumes.lines.contains { abs((Double($0) ?? -1) - 0.25) < 0.001 }
        } detail: { "\(volumes.lines)" }
        XCTAssertNotEqual(try playerctl("volume", "loud").code, 0, "not a number")
    }

    /// `PropertiesChanged` and `Seeked` reach a follower when another client (an app through
    /// SystemMusicPlayer) changes playback.
    func testFollowersSeeWhatOtherClientsChange() async throws {
        let songs = try GeneratedSongs.tones([440, 550], frames: 441_000, into: directory).songs
        let app = SystemMusicPlayer(environment: environment)
        app.queue = MusicPlayer.Queue(for: songs)
        try await waitForTheBusName()

        let metadata = try Follower(["--player=musickit", "--follow", "metadata", "--format", "{{status}} {{title}}"], bus: busAddress)
        let positions = try Follower(["--player=musickit", "--follow", "position"], bus: busAddress)
        defer { metadata.stop(); positions.stop() }

        try await app.play()
        await eventually("Playing Tone 1 followed") { metadata.lines.contains("Playing Tone 1") } detail: { "\(metadata.lines)" }
        try await app.skipToNextEntry()
        await eventually("Playing Tone 2 followed") { metadata.lines.contains("Playing Tone 2") } detail: { "\(metadata.lines)" }
        app.pause()
        await eventually("Paused Tone 2 followed") { metadata.lines.contains("Paused Tone 2") } detail: { "\(metadata.lines)" }
        app.playbackTime = 6
        await eventually("Seeked to 6 s followed") {
            positions.lines.contains { abs((Double($0) ?? -1) - 6) < 0.05 }
        } detail: { "\(positions.lines)" }
    }
}

extension SystemPlayerMPRISTests {
    /// The audio device fails (its sound server dies under the stream): both apps and MPRIS are
    /// told, and when the server is back the daemon plays on from where it was heard. The daemon
    /// plays through a PulseAudio server of its own here; the shared test sink is not touched.
    func testADeviceFailureIsReportedEverywhereAndPlaybackResumesWhenTheDeviceIsBack() async throws {
        // Killed (as a crash) and started again on the same socket, by its PID.
        let server = try PrivatePulseServer(in: directory.appendingPathComponent("pulse"))
        addTeardownBlock { server.stop(signal: SIGKILL) }
        try server.start()
        let app = SystemMusicPlayer(environment: environment)
        try app.stopDaemon()  // the next call starts one that plays through the server above
        let sharedServer = ProcessInfo.processInfo.environment["PULSE_SERVER"]
        setenv("PULSE_SERVER", server.address, 1)
        setenv("MUSICKIT_AUDIO_DEVICE", "pulse", 1)
        defer { if let sharedServer { setenv("PULSE_SERVER", sharedServer, 1) } }
        let other = SystemMusicPlayer(environment: environment)
        _ = try other.daemonProcessID()
        if let sharedServer { setenv("PULSE_SERVER", sharedServer, 1) }

        let songs = try GeneratedSongs.tones([440], frames: 44_100 * 20, into: directory).songs
        app.queue = MusicPlayer.Queue(for: songs)
        try await waitForTheBusName()
        try await app.play()
        await eventually("1.5 s heard, as the daemon reports it") {
            (Double((try? playerctl("position").out.trimmingCharacters(in: .whitespacesAndNewlines)) ?? "") ?? 0) > 1.5
        }

        server.stop(signal: SIGKILL)
        await eventually("both apps see the interruption") {
            app.state.playbackStatus == .interrupted && other.state.playbackStatus == .interrupted
        } detail: { "\(app.state.playbackStatus) \(other.state.playbackStatus)" }
        XCTAssertEqual(try playerctl("status").out, "Stopped\n", "MPRIS has no interrupted: stopped")
        let heardAt = other.playbackTime
        XCTAssertGreaterThan(heardAt, 1.4, "where it was heard when the server went away")

        try server.start()
        await eventually("playing again once the server is back") {
            app.state.playbackStatus == .playing && other.state.playbackStatus == .playing
        } detail: { "\(app.state.playbackStatus); the daemon's log: " + ((try? String(contentsOf: SystemMusicPlayer.daemonLogURL(self.environment), encoding: .utf8)) ?? "") }
        XCTAssertEqual(app.playbackTime, heardAt, accuracy: 1, "on from where it was heard, not from the start")
        XCTAssertEqual(try playerctl("status").out, "Playing\n")
    }
}

/// `playerctl --follow …` running, its lines collected as they come.
private final class Follower: Sendable {
    private let process = Process()
    private let collected = Mutex<[String]>([])
    private let partial = Mutex("")
    private let exited = DispatchSemaphore(value: 0)
    private let output: FileHandle

    init(_ arguments: [String], bus: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/playerctl")
        process.arguments = arguments
        process.environment = ["DBUS_SESSION_BUS_ADDRESS": bus, "PATH": "/usr/bin:/bin"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        output = out.fileHandleForReading
        output.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil } else { self?.take(data) }  // at the end: stop reading
        }
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
    }

    var lines: [String] { collected.withLock { $0 } }

    private func take(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        let complete = partial.withLock { rest -> [String] in
            var lines = (rest + text).components(separatedBy: "\n")
            rest = lines.removeLast()
            return lines
        }
        collected.withLock { $0 += complete }
    }

    func stop() {
        // SIGKILL: started from a task's thread, playerctl inherits its blocked SIGTERM.
        kill(process.processIdentifier, SIGKILL)
        exited.wait()
        output.readabilityHandler = nil
    }
}
