import AudioMeasurement
import AudioTestSupport
import Foundation
import XCTest

/// Snapcast's side of the system player (issue #46): snapserver runs the control script it ships,
/// `meta_mpd.py`, against musickitd's MPD socket, and its clients (Snapweb, the apps; here its
/// JSON-RPC, which they speak) see what plays and control it.
final class SnapcastControlTests: XCTestCase {
    private static let metaMPD = "/usr/share/snapserver/plug-ins/meta_mpd.py"

    /// The rooms' clients see the title, artist, album, state and position of what musickitd
    /// plays, and their next, pause, seek and play reach it.
    func testSnapcastsClientsSeeWhatPlaysAndControlIt() throws {
        guard SnapcastServer.isInstalled, FileManager.default.fileExists(atPath: Self.metaMPD) else {
            throw XCTSkip("snapserver is not installed (scripts/setup-system installs it)")
        }
        // The script's modules, from Debian's packages, for Debian's python (a python3 earlier
        // on PATH may not have them).
        let python = "/usr/bin/python3"
        guard try runTool(python, ["-c", "import mpd, musicbrainzngs, dbus, gi"], environment: [:]).code == 0 else {
            throw XCTSkip("meta_mpd.py's modules are missing (scripts/setup-system installs python3-mpd, python3-musicbrainzngs)")
        }
        let directory = try makeTemporaryDirectory(self)
        let music = directory.appendingPathComponent("Music/The Breeze/Weather")
        try FileManager.default.createDirectory(at: music, withIntermediateDirectories: true)
        let songs = [("Zephyr", 1), ("Arctic", 2)].map { music.appendingPathComponent("\($0.1) - \($0.0).flac") }
        for (index, (title, track)) in [("Zephyr", 1), ("Arctic", 2)].enumerated() {
            try writeTone(to: songs[index], hz: 440, seconds: 30, title: title, artist: "The Breeze", album: "Weather", trackNumber: track)
        }
        let runtime = directory.appendingPathComponent("runtime")
        let socket = runtime.appendingPathComponent("mpd.sock").path
        // MusicBrainz, where the script looks for a song's cover when the song carries no
        // `arturl`, cannot be reached from here: a local server stands in, answering that it
        // knows no such album (unreachable, the script's lookup raises and its updates stop).
        let stand = directory.appendingPathComponent("python")
        try FileManager.default.createDirectory(at: stand, withIntermediateDirectories: true)
        try """
        import http.server, threading, musicbrainzngs
        class NoRelease(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                open(%r, "a").write(self.path + "\\n")
                body = b'<?xml version="1.0" encoding="UTF-8"?><metadata xmlns="http://musicbrainz.org/ns/mmd-2.0#"><release-list count="0" offset="0"/></metadata>'
                self.send_response(200)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *arguments):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), NoRelease)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        musicbrainzngs.set_hostname("127.0.0.1:%d" % server.server_port)
        """.replacingOccurrences(of: "%r", with: "'\(directory.appendingPathComponent("musicbrainz.log").path)'")
            .write(to: stand.appendingPathComponent("sitecustomize.py"), atomically: true, encoding: .utf8)
        // snapserver 0.26 runs the script with its own arguments only; a person's musickitd
        // serves MPD on 127.0.0.1:6600, where the script looks by default (README), this one
        // on its socket.
        let script = directory.appendingPathComponent("meta_musickitd").path
        try """
        #!/bin/sh
        PYTHONPATH=\(shellQuoted([stand.path])) exec \(python) \(Self.metaMPD) --mpd-host=\(shellQuoted([socket])) "$@"

        """.write(toFile: script, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(script, 0o755), 0)

        let snapcast = try SnapcastServer(directory: directory, bufferMilliseconds: 300, controlScript: script)
        defer { snapcast.stop() }
        let environment = ProcessInfo.processInfo.environment.merging([
            "MUSICKIT_CONFIG_DIR": directory.appendingPathComponent("config").path,
            "MUSICKIT_DATA_DIR": directory.appendingPathComponent("data").path,
            "MUSICKIT_RUNTIME_DIR": runtime.path,
            "MUSICKIT_AUTHORIZATION": "authorized",
            "MUSICKIT_AUDIO_DEVICE": "snapcast:\(snapcast.fifo)?rate=44100&buffer=300",
        ]) { $1 }
        func musickit(_ arguments: [String]) throws -> (code: Int32, out: String) {
            try runTool(CommandLineTests.executable.path, arguments, environment: environment)
        }
        func mpc(_ arguments: [String]) throws -> String { try runTool("/usr/bin/mpc", arguments, environment: ["MPD_HOST": socket]).out }
        XCTAssertEqual(try musickit(["daemon", "start"]).code, 0)
        defer { _ = try? musickit(["daemon", "stop"]) }
        XCTAssertEqual(try runTool("/usr/bin/mpc", ["add"] + songs.map(\.path), environment: ["MPD_HOST": socket]).code, 0)
        _ = try mpc(["play"])

        /// The stream's properties as the clients get them, once `condition` holds (10 s).
        func properties(_ description: String, _ condition: ([String: Any]) -> Bool) throws -> [String: Any] {
            let deadline = Date(timeIntervalSinceNow: 10)
            var last: [String: Any] = [:]
            while Date() < deadline {
                let status = try snapcast.request("Server.GetStatus") as? [String: Any]
                let streams = (status?["server"] as? [String: Any])?["streams"] as? [[String: Any]] ?? []
                last = streams.first { $0["id"] as? String == "default" }?["properties"] as? [String: Any] ?? [:]
                if condition(last) { return last }
                usleep(50_000)
            }
            XCTFail("\(description): the clients were shown \(last); snapserver's log: \(snapcast.folder.path)")
            return last
        }
        func metadata(_ properties: [String: Any]) -> [String: Any] { properties["metadata"] as? [String: Any] ?? [:] }
        func control(_ command: String, _ parameters: [String: Any] = [:]) throws {
            var request: [String: Any] = ["id": "default", "command": command]
            if !parameters.isEmpty { request["params"] = parameters }
            _ = try snapcast.request("Stream.Control", request)
        }

        let first = try properties("the first song, playing") { metadata($0)["title"] as? String == "Zephyr" && $0["playbackStatus"] as? String == "playing" }
        XCTAssertEqual(metadata(first)["artist"] as? [String], ["The Breeze"])
        XCTAssertEqual(metadata(first)["album"] as? String, "Weather")
        XCTAssertEqual(metadata(first)["trackNumber"] as? Int, 1)
        XCTAssertEqual(metadata(first)["duration"] as? Double ?? 0, 30, accuracy: 0.1)
        XCTAssertEqual(first["canControl"] as? Bool, true)
        XCTAssertNotNil(first["position"] as? Double, "the position is shown")

        try control("next")
        _ = try properties("the next song after the clients' next") { metadata($0)["title"] as? String == "Arctic" }
        XCTAssertTrue(try mpc(["current", "-f", "%title%"]).hasPrefix("Arctic"), "musickitd plays it")

        try control("pause")
        _ = try properties("paused after the clients' pause") { $0["playbackStatus"] as? String == "paused" }
        XCTAssertTrue(try mpc(["status"]).contains("[paused]"))

        try control("setPosition", ["position": 20])
        let sought = try properties("the position the clients set") { ($0["position"] as? Double).map { abs($0 - 20) < 0.5 } ?? false }
        XCTAssertEqual(sought["playbackStatus"] as? String, "paused", "a seek while paused stays paused")
        let status = try mpc(["status"])
        XCTAssertTrue(status.contains("0:20/0:30"), status)

        try control("play")
        _ = try properties("playing after the clients' play") { $0["playbackStatus"] as? String == "playing" }
        XCTAssertTrue(try mpc(["status"]).contains("[playing]"))

        // A library song carries no `arturl` (its cover is a file here, which the clients on
        // other machines cannot load): the script looked for it by artist and album.
        let lookups = (try? String(contentsOfFile: directory.appendingPathComponent("musicbrainz.log").path, encoding: .utf8)) ?? ""
        XCTAssertTrue(lookups.contains("artist%3A%28the+breeze%29+release%3A%28weather%29"), lookups)
    }
}
