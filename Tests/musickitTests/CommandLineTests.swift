import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import MusicKitCore
import XCTest

/// The `musickit` binary end to end: arguments, exit codes, output, signals.
final class CommandLineTests: XCTestCase {
    /// Runs the built `musickit` with `arguments`; returns its exit code and output.
    @discardableResult
    private func run(_ arguments: [String], environment: [String: String] = [:], executable: URL? = nil,
                     arguments executableArguments: [String]? = nil,
                     whileRunning: ((Process) -> Void)? = nil) throws -> (code: Int32, out: String, err: String) {
        let (process, out, err) = try start(executableArguments ?? arguments, environment: environment, executable: executable)
        whileRunning?(process)
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    /// Starts `musickit ARGUMENTS` (or `executable`) with its output and errors on pipes (errors
    /// on the output's, `mergingErrors`: one pipe to drain).
    private func start(_ arguments: [String], environment: [String: String] = [:], executable: URL? = nil,
                       mergingErrors: Bool = false) throws -> (process: Process, out: Pipe, err: Pipe) {
        let process = Process()
        process.executableURL = executable ?? CommandLineTests.executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = mergingErrors ? out : Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, out, err)
    }

    static var executable: URL {
        // Tests run from .build/<triple>/<configuration>/, next to the musickit binary.
        var directory = Bundle.main.bundleURL
        while directory.pathComponents.count > 1 {
            let candidate = directory.appendingPathComponent("musickit")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: ".build/debug/musickit")
    }

    /// A private config and data folder for one test, so its catalog and account are its own.
    private func isolatedEnvironment() throws -> [String: String] {
        let root = try temporaryDirectory()
        return ["MUSICKIT_CONFIG_DIR": root.appendingPathComponent("config").path,
                "MUSICKIT_DATA_DIR": root.appendingPathComponent("data").path]
    }

    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("musickit-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    private func tone(_ url: URL, hz: Double, seconds: Double, title: String) throws {
        try writeTone(to: url, hz: hz, seconds: seconds, title: title)
    }

    func testNoArgumentsPrintsUsageAndExitsWithTwo() throws {
        let result = try run([])
        XCTAssertEqual(result.code, 2)
        XCTAssertTrue(result.err.contains("usage: musickit COMMAND"), result.err)
    }

    /// A storefront that is no country is refused (issue #44: `zz` was taken, and every search
    /// then found nothing); the account is left as it was.
    func testAStorefrontThatIsNoCountryIsAUsageError() throws {
        let environment = try isolatedEnvironment()
        let refused = try run(["account", "--storefront", "zz"], environment: environment)
        XCTAssertEqual(refused.code, 2)
        XCTAssertTrue(refused.err.contains("'zz' is not a country code"), refused.err)
        XCTAssertFalse(try run(["account"], environment: environment).out.contains("zz"), "unchanged")
        XCTAssertEqual(try run(["account", "--storefront", "de"], environment: environment).code, 0)
        XCTAssertTrue(try run(["account"], environment: environment).out.contains("storefront:         de"))
    }

    /// `--shuffle` starts at a random song (issue #44: always the first file given): over ten
    /// runs of five files, more than one song comes first (all ten the same: 1 in 10^7).
    func testShuffleStartsAtARandomSong() throws {
        let directory = try temporaryDirectory()
        let files = try (1...5).map { index -> String in
            let url = directory.appendingPathComponent("\(index).flac")
            try tone(url, hz: 200 + 100 * Double(index), seconds: 0.05, title: "Shuffled \(index)")
            return url.path
        }
        var firsts = Set<String>()
        for _ in 0..<10 {
            let result = try run(["play", "--no-ui", "--device", "null", "--shuffle"] + files)
            XCTAssertEqual(result.code, 0, result.err)
            let first = result.out.split(separator: "\n").first { $0.contains("Shuffled ") }
            firsts.insert(first.map { String($0.split(separator: "Shuffled ").last!.prefix(1)) } ?? "none")
        }
        XCTAssertGreaterThan(firsts.count, 1, "the first song: \(firsts)")
        XCTAssertFalse(firsts.contains("none"))
    }

    func testVersionIsPrinted() throws {
        let result = try run(["--version"])
        XCTAssertEqual(result.code, 0)
        XCTAssertEqual(result.out, "musickit (OpenMusicKit) \(MusicKitEnvironment.version)\n")
    }

    func testHelpListsCommandsAndExitCodes() throws {
        let result = try run(["--help"])
        XCTAssertEqual(result.code, 0)
        XCTAssertTrue(result.out.contains("play"))
        XCTAssertTrue(result.out.contains("130"))
    }

    /// `probe` says what a file is, its ReplayGain values, and the loudness tags it ignores
    /// (issue #45: a broken tag is named, never applied).
    func testProbeShowsTheReplayGainAndNamesBrokenTags() throws {
        let directory = try temporaryDirectory()
        let plain = directory.appendingPathComponent("plain.flac")
        try tone(plain, hz: 440, seconds: 1, title: "Plain")
        let tagged = directory.appendingPathComponent("tagged.flac")
        try encodeWithFFmpeg(plain, to: tagged, codec: "flac",
                             arguments: ["-metadata", "REPLAYGAIN_TRACK_GAIN=-6.52 dB", "-metadata", "REPLAYGAIN_TRACK_PEAK=0.98",
                                         "-metadata", "REPLAYGAIN_ALBUM_GAIN=+90 dB", "-metadata", "album_artist=Various Artists",
                                         "-metadata", "disc=2/3"])
        let result = try run(["probe", plain.path, tagged.path])
        XCTAssertEqual(result.code, 0, result.err)
        let lines = result.out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, "one line per file, and the tagged one's ReplayGain: \(result.out)")
        XCTAssertTrue(lines[1].hasSuffix("title \"Plain\", artist \"Test Tones\", album artist \"Various Artists\", disc \"2\""),
                      "what libsndfile does not read, read through FFmpeg: \(lines[1])")
        XCTAssertEqual(lines.last, "  ReplayGain: track -6.52 dB (peak 0.980000); ignored: REPLAYGAIN_ALBUM_GAIN=+90 dB")
    }

    /// `probe --loudness` measures as an independent meter does (FFmpeg's `ebur128` filter):
    /// two tones 20 dB apart, and a bundled preview.
    func testProbeMeasuresLoudnessAsFFmpegsMeterDoes() throws {
        let directory = try temporaryDirectory()
        let loud = directory.appendingPathComponent("loud.flac")
        let quiet = directory.appendingPathComponent("quiet.flac")
        try writeAudioFile(loud, TestSignal.tone(hz: 997, frames: 44_100 * 5, sampleRate: 44_100, channels: 2, amplitude: 0.5))
        try writeAudioFile(quiet, TestSignal.tone(hz: 997, frames: 44_100 * 5, sampleRate: 44_100, channels: 2, amplitude: 0.05))
        let preview = try XCTUnwrap(MusicKitEnvironment.bundledAssets()).appendingPathComponent("Previews/mx-ar-02.ogg")
        for url in [loud, quiet, preview] {
            let result = try run(["probe", "--loudness", url.path])
            XCTAssertEqual(result.code, 0, result.err)
            let lines: [String] = result.out.components(separatedBy: "\n")
            let line: String = try XCTUnwrap(lines.first { $0.contains("loudness:") }, result.out)
            let words: [String] = line.split(separator: " ").map(String.init)
            let ours: Double = try XCTUnwrap(Double(words[1]), line)
            let (theirs, integrated) = try ffmpegIntegratedLoudness(url)
            XCTAssertEqual(ours, theirs, accuracy: 0.11, "\(url.lastPathComponent): \(line) against FFmpeg's \(integrated)")
        }
    }

    /// `account --sound-check` is the account's Sound Check, which every player starts with.
    func testAccountSetsSoundCheck() throws {
        let environment = try isolatedEnvironment()
        XCTAssertTrue(try run(["account"], environment: environment).out.contains("sound check:        off\n"))
        let set = try run(["account", "--sound-check", "album"], environment: environment)
        XCTAssertEqual(set.code, 0, set.err)
        XCTAssertTrue(set.out.contains("sound check:        album\n"), set.out)
        XCTAssertTrue(try run(["account", "--json"], environment: environment).out.contains("\"soundCheck\" : \"album\""))
        let bad = try run(["account", "--sound-check", "loud"], environment: environment)
        XCTAssertEqual(bad.code, 2)
        XCTAssertTrue(bad.err.contains("--sound-check takes off, track, album or auto, not loud"), bad.err)
    }

    func testEveryCommandHasHelp() throws {
        for command in ["play", "search", "catalog", "status", "seek", "volume", "daemon"] {
            let result = try run([command, "--help"])
            XCTAssertEqual(result.code, 0, command)
            XCTAssertTrue(result.out.contains("usage: musickit \(command)"), result.out)
            let viaHelp = try run(["help", command])
            XCTAssertEqual(viaHelp.out, result.out)
        }
    }

    func testUnknownCommandOrOptionIsAUsageError() throws {
        XCTAssertEqual(try run(["dance"]).code, 2)
        let result = try run(["play", "--loudly", "a.flac"])
        XCTAssertEqual(result.code, 2)
        XCTAssertTrue(result.err.contains("unknown option --loudly"), result.err)
        XCTAssertTrue(result.err.contains("usage: musickit play"), result.err)
        XCTAssertEqual(try run(["play", "--device"]).code, 2, "an option without its value")
        XCTAssertEqual(try run(["play"]).code, 2, "no file")
    }

    /// musickitd's own arguments: --help, and a wrong one or a bad port is a usage error (2).
    func testTheDaemonsArgumentsAreCheckedBeforeItStarts() throws {
        let daemon = CommandLineTests.executable.deletingLastPathComponent().appendingPathComponent("musickitd")
        let help = try run([], executable: daemon, arguments: ["--help"])
        XCTAssertEqual(help.code, 0)
        XCTAssertTrue(help.out.contains("usage: musickitd [--mpd-port PORT]"), help.out)
        for bad in [["--mpd-port"], ["--mpd-port", "70000"], ["--mpd-port", "x"], ["--loud"]] {
            let result = try run([], executable: daemon, arguments: bad)
            XCTAssertEqual(result.code, 2, "\(bad): \(result.err)")
            XCTAssertTrue(result.err.contains("usage: musickitd"), result.err)
        }
    }

    func testNothingPlayableExitsWithFourAndSaysWhy() throws {
        let result = try run(["play", "--no-ui", "--device", "null", "/nonexistent/song.flac"])
        XCTAssertEqual(result.code, 4)
        XCTAssertTrue(result.err.contains("/nonexistent/song.flac: no such file"), result.err)
    }

    func testUnknownDeviceExitsWithFiveAndListsDevices() throws {
        let directory = try temporaryDirectory()
        let song = directory.appendingPathComponent("a.flac")
        try tone(song, hz: 440, seconds: 0.2, title: "A")
        let result = try run(["play", "--no-ui", "--device", "no_such_pcm", song.path])
        XCTAssertEqual(result.code, 5)
        XCTAssertTrue(result.err.contains("no_such_pcm"), result.err)
        XCTAssertTrue(result.err.contains("--device"), result.err)
        XCTAssertFalse(result.err.contains("ALSA lib"), "alsa-lib's own messages are silenced: \(result.err)")
    }

    private func sinkDevice() throws -> String {
        if let device = ProcessInfo.processInfo.environment["MUSICKIT_TEST_PULSE_DEVICE"] { return device }
        if ProcessInfo.processInfo.environment["MUSICKIT_TEST_REQUIRE_AUDIO_SERVER"] == "1" {
            XCTFail("MUSICKIT_TEST_REQUIRE_AUDIO_SERVER is set but MUSICKIT_TEST_PULSE_DEVICE is not")
        }
        throw XCTSkip("no PulseAudio test sink: run the tests with scripts/test")
    }

    func testPlaysFilesInOrderSkipsTheBrokenOneAndExitsWithThree() throws {
        let device = try sinkDevice()
        let directory = try temporaryDirectory()
        let first = directory.appendingPathComponent("first.flac")
        let last = directory.appendingPathComponent("last.flac")
        try tone(first, hz: 440, seconds: 0.3, title: "First Tone")
        try tone(last, hz: 660, seconds: 0.3, title: "Last Tone")
        let broken = directory.appendingPathComponent("broken.flac")
        try Data("not flac".utf8).write(to: broken)
        let result = try run(["play", "--no-ui", "--device", device, first.path, broken.path, last.path])
        XCTAssertEqual(result.code, 3, "one entry failed: \(result.err)")
        let lines = result.out.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains { $0.contains("[1/3] First Tone — Test Tones") }, result.out)
        XCTAssertTrue(lines.contains { $0.contains("[3/3] Last Tone — Test Tones") }, result.out)
        XCTAssertLessThan(lines.firstIndex { $0.contains("[1/3]") }!, lines.firstIndex { $0.contains("[3/3]") }!)
        XCTAssertTrue(result.err.contains("[2/3] skipped “broken”: \(broken.path): corrupt"), result.err)
    }

    /// `play --system` hands the queue to musickitd and returns while it plays on; status,
    /// pause, next, seek and queue talk to it; `daemon` starts, shows and stops it.
    func testTheSystemPlayerFromTheCommandLine() throws {
        let device = try sinkDevice()
        let directory = try temporaryDirectory()
        var environment = try isolatedEnvironment()
        environment["MUSICKIT_RUNTIME_DIR"] = directory.appendingPathComponent("runtime").path
        environment["MUSICKIT_AUDIO_DEVICE"] = device
        let first = directory.appendingPathComponent("first.flac")
        let second = directory.appendingPathComponent("second.flac")
        try tone(first, hz: 440, seconds: 6, title: "First Tone")
        try tone(second, hz: 660, seconds: 6, title: "Second Tone")
        XCTAssertEqual(try run(["daemon", "status"], environment: environment).code, 1, "not running yet")

        let played = try run(["play", "--system", first.path, second.path], environment: environment)
        XCTAssertEqual(played.code, 0, played.err)
        XCTAssertTrue(played.out.hasPrefix("playing: First Tone"), played.out)
        addTeardownBlock { [self] in _ = try? run(["daemon", "stop"], environment: environment) }
        let daemon = try run(["daemon", "status"], environment: environment)
        XCTAssertEqual(daemon.code, 0)
        XCTAssertTrue(daemon.out.contains("musickitd runs"), daemon.out)
        let runtime = directory.appendingPathComponent("runtime").path
        XCTAssertTrue(daemon.out.contains("MPD socket: \(runtime)/mpd.sock\n") && daemon.out.contains("socket:     \(runtime)/player.sock\n"),
                      "both sockets: \(daemon.out)")
        XCTAssertTrue(try run(["status"], environment: environment).out.hasPrefix("playing: First Tone"), "it plays on")

        let paused = try run(["pause"], environment: environment)
        XCTAssertTrue(paused.out.hasPrefix("paused: First Tone"), paused.out)
        XCTAssertEqual(try run(["resume"], environment: environment).code, 0)
        // next, previous and resume send their request when the process starts (EarlyRequestTests):
        // one skip each, not two (a second next would end the queue).
        let next = try run(["next"], environment: environment)
        XCTAssertTrue(next.out.hasPrefix("playing: Second Tone"), next.out + next.err)
        let previous = try run(["previous"], environment: environment)
        XCTAssertTrue(previous.out.hasPrefix("playing: First Tone"), previous.out + previous.err)
        let again = try run(["next"], environment: environment)
        XCTAssertTrue(again.out.hasPrefix("playing: Second Tone"), again.out + again.err)
        XCTAssertEqual(try run(["seek", "4"], environment: environment).code, 0)
        var status = ""
        for _ in 0..<40 where !status.contains("at 0:04") && !status.contains("at 0:05") {
            status = try run(["status"], environment: environment).out
        }
        XCTAssertTrue(status.contains("at 0:04") || status.contains("at 0:05"), "the seek is heard: \(status)")
        XCTAssertEqual(try run(["queue"], environment: environment).out, "Second Tone — Test Tones\n")
        XCTAssertEqual(try run(["seek", "soon"], environment: environment).code, 2)
        XCTAssertEqual(try run(["volume"], environment: environment).out, "volume: 100%\n")
        XCTAssertEqual(try run(["volume", "40"], environment: environment).out, "volume: 40%\n")
        XCTAssertEqual(try run(["volume", "-15"], environment: environment).out, "volume: 25%\n")
        XCTAssertEqual(try run(["volume", "+100"], environment: environment).out, "volume: 100%\n", "clamped")
        XCTAssertEqual(try run(["volume", "130"], environment: environment).code, 2)
        XCTAssertEqual(try run(["volume", "loud"], environment: environment).code, 2)
        XCTAssertEqual(try run(["volume", "30"], environment: environment).code, 0)

        XCTAssertEqual(try run(["daemon", "stop"], environment: environment).out, "musickitd stopped\n")
        XCTAssertEqual(try run(["daemon", "status"], environment: environment).code, 1)
        let restarted = try run(["status"], environment: environment)
        XCTAssertTrue(restarted.out.hasPrefix("stopped: Second Tone"), "a new daemon, where the last one was: \(restarted.out)")
        XCTAssertEqual(try run(["volume"], environment: environment).out, "volume: 30%\n", "and at the volume it had")
        XCTAssertTrue(try run(["daemon", "logs"], environment: environment).out.contains("restored 2 entries"))
    }

    func testSignalsSkipAndInterrupt() throws {
        let device = try sinkDevice()
        let directory = try temporaryDirectory()
        let long = directory.appendingPathComponent("long.flac")
        let next = directory.appendingPathComponent("next.flac")
        try tone(long, hz: 440, seconds: 20, title: "Long Tone")
        try tone(next, hz: 660, seconds: 20, title: "Next Tone")
        let started = Date()
        let result = try run(["play", "--no-ui", "--device", device, long.path, next.path]) { process in
            usleep(700_000)
            kill(process.processIdentifier, SIGUSR1)
            usleep(500_000)
            kill(process.processIdentifier, SIGINT)
        }
        XCTAssertEqual(result.code, 130)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "Ctrl-C stops at once")
        XCTAssertTrue(result.out.contains("[2/2] Next Tone"), "SIGUSR1 skipped: \(result.out)")
    }

    /// Every start pays for the libraries the tool links (~0.2-0.8 ms each here): the audio,
    /// database and decoder libraries are opened when first needed instead, so `musickit next`
    /// or `--help` loads none of them. FoundationNetworking (libcurl and ~25 more) is linked
    /// only by the `MusicKit` module apps import, not by MusicKitCore, which the tool uses.
    func testTheToolLinksNoLibraryItOpensWhenNeeded() throws {
        let (code, out) = try runTool("/usr/bin/readelf", ["-d", CommandLineTests.executable.path], environment: [:])
        XCTAssertEqual(code, 0, out)
        let needed = out.split(separator: "\n").filter { $0.contains("(NEEDED)") }.map(String.init)
        XCTAssertFalse(needed.isEmpty, "readelf lists the needed libraries: \(out)")
        for library in ["libasound", "libsqlite3", "libsndfile", "libavformat", "libavcodec", "libsoxr", "libsystemd",
                        "libcrypto", "libssl", "libpng", "libchafa", "libFoundationNetworking", "libcurl"] {
            XCTAssertFalse(needed.contains { $0.contains(library) }, "\(library) is linked: \(needed)")
        }
    }

    // MARK: Catalog

    func testSearchPrintsATableAndExitsWithZero() throws {
        let result = try run(["search", "through", "space"], environment: try isolatedEnvironment())
        XCTAssertEqual(result.code, 0, result.err)
        XCTAssertTrue(result.out.contains("Songs\nID"), result.out)
        XCTAssertTrue(result.out.contains("Through Space, part 1"), result.out)
        XCTAssertTrue(result.out.contains("Through Space (gapless excerpt)"), result.out)
    }

    func testSearchAsJSONIsTheAppleMusicAPIShape() throws {
        let result = try run(["search", "--types", "songs", "--limit", "2", "--json", "obsidian"], environment: try isolatedEnvironment())
        XCTAssertEqual(result.code, 0, result.err)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        let songs = try XCTUnwrap((object["results"] as? [String: Any])?["songs"] as? [String: Any])
        XCTAssertEqual((songs["data"] as? [Any])?.count, 2)
        XCTAssertNotNil(songs["next"], "more results follow")
    }

    func testSearchWithNothingFoundExitsWithFourAndBadTypesAreUsageErrors() throws {
        let environment = try isolatedEnvironment()
        XCTAssertEqual(try run(["search", "qwxzqwxz"], environment: environment).code, 4)
        XCTAssertEqual(try run(["search", "--types", "podcasts", "x"], environment: environment).code, 2)
        XCTAssertEqual(try run(["search", "--limit", "many", "x"], environment: environment).code, 2)
    }

    func testCatalogLookupAcrossStorefrontsWithEquivalents() throws {
        let environment = try isolatedEnvironment()
        let plain = try run(["catalog", "songs", "--storefront", "gb", "1762000017", "1762000001"], environment: environment)
        XCTAssertEqual(plain.code, 3, "one ID is not in gb")
        XCTAssertTrue(plain.err.contains("not in the catalog: song 1762000017"), plain.err)
        let equivalents = try run(["catalog", "songs", "--storefront", "gb", "--find-equivalents", "--json", "1762000017"],
                                  environment: environment)
        XCTAssertEqual(equivalents.code, 0, equivalents.err)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(equivalents.out.utf8)) as? [String: Any])
        XCTAssertEqual((object["requested"] as? [String: String])?["1762000017"], "1772000017")
    }

    /// With a developer token the catalog commands ask the Apple Music API (here a local server
    /// answering the API's search document); its answers are kept, and answer when it is gone.
    func testSearchAsksTheAppleMusicAPIWithATokenAndAnswersFromTheCacheOffline() throws {
        var environment = try isolatedEnvironment()
        let embedded = try run(["catalog", "status"], environment: environment)
        XCTAssertEqual(embedded.code, 0, embedded.err)
        XCTAssertTrue(embedded.out.contains("answers from: the embedded catalog: no developer token"), embedded.out)
        let refused = try run(["search", "--remote", "heroes"], environment: environment)
        XCTAssertEqual(refused.code, 1)
        XCTAssertTrue(refused.err.contains("MUSICKIT_DEVELOPER_TOKEN"), refused.err)

        let www = try temporaryDirectory().appendingPathComponent("www")
        try FileManager.default.createDirectory(at: www.appendingPathComponent("v1/catalog/us"), withIntermediateDirectories: true)
        try Data(#"""
            {"results":{"songs":{"href":"/v1/catalog/us/search?term=heroes&types=songs&limit=10","data":[
              {"id":"1440000001","type":"songs","href":"/v1/catalog/us/songs/1440000001","attributes":{
                "name":"Heroes From The API","artistName":"Remote Band","albumName":"Far Away","durationInMillis":201000,
                "playParams":{"id":"1440000001","kind":"song"}}}]}}}
            """#.utf8).write(to: www.appendingPathComponent("v1/catalog/us/search"))
        let server = try HTTPFileServer(folder: www, headers: ["Cache-Control": "no-cache"])
        defer { server.stop() }
        let claims = #"{"iss":"TEAM123456","iat":1700000000,"exp":4102444800}"#
        func base64URL(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        environment["MUSICKIT_DEVELOPER_TOKEN"] = base64URL(#"{"alg":"ES256","kid":"KEY1234567"}"#) + "." + base64URL(claims) + ".c2ln"
        environment["MUSICKIT_API_BASE_URL"] = "http://127.0.0.1:\(server.port)"

        let online = try run(["search", "--types", "songs", "heroes"], environment: environment)
        XCTAssertEqual(online.code, 0, online.err)
        XCTAssertTrue(online.out.contains("Heroes From The API") && online.out.contains("Remote Band"), online.out)
        XCTAssertFalse(online.err.contains("could not be reached"), online.err)
        let status = try run(["catalog", "status"], environment: environment)
        XCTAssertEqual(status.code, 0, status.out + status.err)
        XCTAssertTrue(status.out.contains("answers from: the Apple Music API (http://127.0.0.1:\(server.port)): a developer token is configured"), status.out)
        XCTAssertTrue(status.out.contains("developer token: ready") && status.out.contains(": 1 answer,"), status.out)
        XCTAssertFalse(status.out.contains(environment["MUSICKIT_DEVELOPER_TOKEN"]!), "the token is never printed")

        server.stop()
        let offline = try run(["search", "--types", "songs", "heroes"], environment: environment)
        XCTAssertEqual(offline.code, 0, offline.err)
        XCTAssertTrue(offline.out.contains("Heroes From The API"), offline.out)
        XCTAssertTrue(offline.err.contains("could not be reached; answered from its cached answer"), offline.err)
        let local = try run(["catalog", "status", "--local"], environment: environment)
        XCTAssertTrue(local.out.contains("answers from: the embedded catalog: MUSICKIT_CATALOG=local"), local.out)
    }

    func testCatalogAlbumListsItsTracksAndUnknownIDsExitWithFour() throws {
        let environment = try isolatedEnvironment()
        let album = try run(["catalog", "albums", "1761000001"], environment: environment)
        XCTAssertEqual(album.code, 0)
        XCTAssertTrue(album.out.contains("Elysia"))
        XCTAssertTrue(album.out.contains("9.  Megtört Álom"), album.out)
        XCTAssertEqual(try run(["catalog", "albums", "42"], environment: environment).code, 4)
        XCTAssertEqual(try run(["catalog", "podcasts", "42"], environment: environment).code, 2)
    }

    func testCatalogImportNamesTheFileAndPathOfAMistakeAndImportsAGoodDocument() throws {
        let environment = try isolatedEnvironment()
        let folder = try temporaryDirectory()
        let bad = folder.appendingPathComponent("bad.json")
        try #"{"data": [{"id": "5", "type": "songs", "attributes": {"name": 5}}]}"#.write(to: bad, atomically: true, encoding: .utf8)
        let refused = try run(["catalog", "import", bad.path], environment: environment)
        XCTAssertEqual(refused.code, 1)
        XCTAssertTrue(refused.err.contains("bad.json: data[0].attributes.name: expected a string"), refused.err)

        let good = folder.appendingPathComponent("mine.json")
        try #"{"storefront": "us", "data": [{"id": "880001", "type": "songs", "attributes": {"name": "Homemade Tune", "artistName": "Me"}}]}"#
            .write(to: good, atomically: true, encoding: .utf8)
        let imported = try run(["catalog", "import", good.path], environment: environment)
        XCTAssertEqual(imported.code, 0, imported.err)
        XCTAssertTrue(imported.err.contains("imported:"), imported.err)
        let found = try run(["search", "homemade"], environment: environment)
        XCTAssertTrue(found.out.contains("880001"), found.out)
    }

    func testPlayResolvesACatalogSearchTerm() throws {
        let device = try sinkDevice()
        var environment = try isolatedEnvironment()
        environment["MUSICKIT_AUTHORIZATION"] = "authorized"
        let result = try run(["play", "--no-ui", "--device", device, "gapless", "demo"], environment: environment) { process in
            usleep(1_500_000)
            kill(process.processIdentifier, SIGINT)
        }
        XCTAssertEqual(result.code, 130)
        XCTAssertTrue(result.out.contains("▶ [1/3] Through Space, part 1 — Maxstack"), result.out)
    }

    /// `play TERM` looks in the library first (issue #44: it searched only the catalog though its
    /// message named the library), and a folder plays its audio files in path order, as mpv and
    /// cmus play one; an empty folder says so and exits with 4.
    func testPlayFindsTheLibraryFirstAndPlaysAFolder() throws {
        let device = try sinkDevice()
        let directory = try temporaryDirectory()
        var environment = try isolatedEnvironment()
        environment["MUSICKIT_AUTHORIZATION"] = "authorized"
        let album = directory.appendingPathComponent("Music/Folder Album")
        try FileManager.default.createDirectory(at: album, withIntermediateDirectories: true)
        // Titles against file order: the album must play in file (track) order.
        try writeTone(to: album.appendingPathComponent("01 b.flac"), hz: 440, seconds: 0.3, title: "Beta Tone",
                      album: "Folder Album", trackNumber: 1)
        try writeTone(to: album.appendingPathComponent("02 a.flac"), hz: 550, seconds: 0.3, title: "Alpha Tone",
                      album: "Folder Album", trackNumber: 2)
        try Data("notes".utf8).write(to: album.appendingPathComponent("notes.txt"))
        let scanned = try run(["library", "scan", directory.appendingPathComponent("Music").path], environment: environment)
        XCTAssertEqual(scanned.code, 0, scanned.err)

        func order(_ result: (code: Int32, out: String, err: String)) -> [String] {
            result.out.split(separator: "\n").compactMap { line in
                ["Beta Tone", "Alpha Tone"].first { line.contains("] \($0)") }
            }.reduce(into: []) { if $0.last != $1 { $0.append($1) } }
        }
        let byTerm = try run(["play", "--no-ui", "--device", device, "folder", "album"], environment: environment)
        XCTAssertEqual(byTerm.code, 0, byTerm.err)
        XCTAssertEqual(order(byTerm), ["Beta Tone", "Alpha Tone"], byTerm.out)
        XCTAssertTrue(byTerm.out.contains("[1/2]"), byTerm.out)

        let byFolder = try run(["play", "--no-ui", "--device", device, album.path], environment: environment)
        XCTAssertEqual(byFolder.code, 0, byFolder.err)
        XCTAssertEqual(order(byFolder), ["Beta Tone", "Alpha Tone"], byFolder.out)

        let empty = directory.appendingPathComponent("Empty")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let nothing = try run(["play", "--no-ui", "--device", device, empty.path], environment: environment)
        XCTAssertEqual(nothing.code, 4)
        XCTAssertTrue(nothing.err.contains("no audio files in the folder \(empty.path)"), nothing.err)
    }

    func testCatalogContentNeedsAccessAndASubscription() throws {
        let environment = try isolatedEnvironment()
        let unauthorized = try run(["play", "--no-ui", "--device", "null", "1762000001"], environment: environment)
        XCTAssertEqual(unauthorized.code, 1)
        XCTAssertTrue(unauthorized.err.contains("musickit authorize musickit --allow"), unauthorized.err)

        XCTAssertEqual(try run(["authorize", "musickit", "--allow"], environment: environment).code, 0)
        XCTAssertEqual(try run(["account", "--subscription", "none"], environment: environment).code, 0)
        let unsubscribed = try run(["play", "--no-ui", "--device", "null", "1762000001"], environment: environment)
        XCTAssertEqual(unsubscribed.code, 4)
        XCTAssertTrue(unsubscribed.err.contains("needs a subscription; `musickit subscribe` shows the offer"), unsubscribed.err)
    }

    /// `musickit daemon device NAME` is the device musickitd plays on from its next start (a
    /// Snapcast setup survives a restart: issue #46), unless its environment names one;
    /// `--default` forgets it.
    func testTheDaemonsDeviceIsKeptForItsNextStart() throws {
        var environment = try isolatedEnvironment()
        environment["MUSICKIT_RUNTIME_DIR"] = try temporaryDirectory().appendingPathComponent("runtime").path
        environment["MUSICKIT_AUDIO_DEVICE"] = ""  // none from the environment
        XCTAssertTrue(try run(["daemon", "device"], environment: environment).out.hasPrefix("the default"))
        let set = try run(["daemon", "device", "null"], environment: environment)
        XCTAssertEqual(set.out, "musickitd plays on null from its next start\n", set.err)
        XCTAssertEqual(try run(["daemon", "device"], environment: environment).out, "null\n")

        XCTAssertEqual(try run(["daemon", "start"], environment: environment).code, 0)
        addTeardownBlock { [self] in _ = try? run(["daemon", "stop"], environment: environment) }
        XCTAssertTrue(try run(["daemon", "status"], environment: environment).out.contains("device:     null"))
        XCTAssertTrue(try run(["daemon", "logs"], environment: environment).out.contains("(audio device: null)"), "it plays there")
        XCTAssertTrue(try run(["daemon", "device", "hw:7"], environment: environment).out.contains("it runs now: musickit daemon stop, then start"))
        XCTAssertEqual(try run(["daemon", "stop"], environment: environment).code, 0)

        // The environment comes first.
        var named = environment
        named["MUSICKIT_AUDIO_DEVICE"] = "null"
        XCTAssertEqual(try run(["daemon", "start"], environment: named).code, 0)
        let log = try run(["daemon", "logs"], environment: named).out
        let lastStart = log.components(separatedBy: "(audio device: ").last?.prefix { $0 != ")" }
        XCTAssertEqual(lastStart.map(String.init), "null", "not hw:7: \(log)")
        XCTAssertEqual(try run(["daemon", "stop"], environment: named).code, 0)

        XCTAssertEqual(try run(["daemon", "device", "--default"], environment: environment).code, 0)
        XCTAssertTrue(try run(["daemon", "device"], environment: environment).out.hasPrefix("the default"))
        XCTAssertEqual(try run(["daemon", "device", "--loud"], environment: environment).code, 2)
    }

    /// `musickit daemon mpd-port PORT` is the loopback port musickitd also serves MPD's protocol
    /// on from its next start (where phone apps and Snapcast's meta_mpd.py look); `--off` leaves
    /// the socket only; anything but a port is a usage error.
    func testTheDaemonsMPDPortIsKeptForItsNextStart() throws {
        var environment = try isolatedEnvironment()
        environment["MUSICKIT_RUNTIME_DIR"] = try temporaryDirectory().appendingPathComponent("runtime").path
        environment["MUSICKIT_AUDIO_DEVICE"] = "null"
        environment["MUSICKIT_MPD_PORT"] = ""  // none from the environment
        XCTAssertTrue(try run(["daemon", "mpd-port"], environment: environment).out.hasPrefix("off"))
        let port = String(try freeLoopbackPort())
        XCTAssertEqual(try run(["daemon", "mpd-port", port], environment: environment).out,
                       "musickitd serves MPD's protocol on 127.0.0.1:\(port) from its next start\n")
        XCTAssertEqual(try run(["daemon", "mpd-port"], environment: environment).out, "\(port)\n")

        XCTAssertEqual(try run(["daemon", "start"], environment: environment).code, 0)
        addTeardownBlock { [self] in _ = try? run(["daemon", "stop"], environment: environment) }
        XCTAssertTrue(try run(["daemon", "status"], environment: environment).out.contains("MPD port:   127.0.0.1:\(port)"))
        let status = try runTool("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", port, "status"], environment: [:])
        XCTAssertEqual(status.code, 0, "mpc reaches it on the port: \(status.out)")
        XCTAssertTrue(try run(["daemon", "mpd-port", "--off"], environment: environment).out.contains("it runs now: musickit daemon stop, then start"))
        XCTAssertEqual(try run(["daemon", "stop"], environment: environment).code, 0)
        XCTAssertEqual(try run(["daemon", "start"], environment: environment).code, 0)
        XCTAssertNotEqual(try runTool("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", port, "status"], environment: [:]).code, 0,
                          "off: nothing on the port")
        XCTAssertEqual(try run(["daemon", "stop"], environment: environment).code, 0)

        for wrong in ["0", "65536", "six", "--loud"] {
            XCTAssertEqual(try run(["daemon", "mpd-port", wrong], environment: environment).code, 2, wrong)
        }
        XCTAssertTrue(try run(["daemon", "--help"], environment: environment).out.contains("mpd-port"))
    }

    /// `library scan --loudness` measures the songs without ReplayGain tags, once: a second
    /// pass finds them known; a tagged one is never measured.
    func testAScanMeasuresTheLoudnessOfUntaggedSongsOnce() throws {
        var environment = try isolatedEnvironment()
        environment["MUSICKIT_AUTHORIZATION"] = "authorized"
        let folder = try temporaryDirectory()
        try tone(folder.appendingPathComponent("plain.flac"), hz: 440, seconds: 1, title: "Plain")
        try encodeWithFFmpeg(folder.appendingPathComponent("plain.flac"), to: folder.appendingPathComponent("tagged.flac"),
                             codec: "flac", arguments: ["-metadata", "REPLAYGAIN_TRACK_GAIN=-3.00 dB"])
        let first = try run(["library", "scan", "--loudness", folder.path], environment: environment)
        XCTAssertEqual(first.code, 0, first.err)
        XCTAssertTrue(first.out.hasSuffix("loudness: 1 measured, 0 known already, 1 tagged, 0 failed\n"), first.out)
        let second = try run(["library", "scan", "--loudness"], environment: environment)
        XCTAssertTrue(second.out.hasSuffix("loudness: 0 measured, 1 known already, 1 tagged, 0 failed\n"), second.out)
        XCTAssertTrue(try run(["library", "--help"], environment: environment).out.contains("--loudness"))

        // Without the flag, a scan measures when the account's Sound Check is on, unless told not to.
        XCTAssertFalse(try run(["library", "scan"], environment: environment).out.contains("loudness:"), "Sound Check is off")
        XCTAssertEqual(try run(["account", "--sound-check", "track"], environment: environment).code, 0)
        let following = try run(["library", "scan"], environment: environment)
        XCTAssertTrue(following.out.hasSuffix("loudness: 0 measured, 1 known already, 1 tagged, 0 failed\n"), following.out)
        XCTAssertFalse(try run(["library", "scan", "--no-loudness"], environment: environment).out.contains("loudness:"))
        XCTAssertEqual(try run(["library", "scan", "--loudness", "--no-loudness"], environment: environment).code, 2)
    }

    func testTitlesFromTagsCannotDriveTheTerminal() throws {
        var environment = try isolatedEnvironment()
        environment["MUSICKIT_AUTHORIZATION"] = "authorized"
        let folder = try temporaryDirectory()
        // A tag that would retitle the terminal (OSC 0) and clear it (CSI 2J), and a C1 CSI.
        let evil = "Evil\u{1B}]0;pwned\u{07}\u{1B}[2J\u{9B}31m"
        try tone(folder.appendingPathComponent("evil.flac"), hz: 440, seconds: 0.2, title: evil)
        XCTAssertEqual(try run(["library", "scan", folder.path], environment: environment).code, 0)
        let listed = try run(["library", "list", "songs"], environment: environment)
        XCTAssertEqual(listed.code, 0, listed.err)
        XCTAssertFalse(listed.out.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B },
                       "no control character reaches the terminal")
        XCTAssertTrue(listed.out.contains(#"Evil\e]0;pwned\x07\e[2J\u{9B}31m"#), "shown escaped: \(listed.out)")
        let json = try run(["library", "list", "songs", "--json"], environment: environment)
        XCTAssertFalse(json.out.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B })
        let decoded = try JSONSerialization.jsonObject(with: Data(json.out.utf8))
        XCTAssertTrue("\(decoded)".contains("pwned"), "the JSON stays valid and keeps the title")
        XCTAssertTrue(json.out.contains(#"\u001b"#) || json.out.contains(#"\u001B"#), json.out)
    }

    func testADeviceWithoutAClockIsRefusedForThePlayerOnATerminal() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { throw XCTSkip("no script(1)") }
        let folder = try temporaryDirectory()
        let file = folder.appendingPathComponent("tone.flac")
        try tone(file, hz: 440, seconds: 0.3, title: "Tone")
        // script(1) gives the command a terminal, as a person's shell would.
        let command = "\(CommandLineTests.executable.path) play --device null \(file.path); echo \"exit=$?\""
        let result = try run([], executable: URL(fileURLWithPath: "/usr/bin/script"),
                             arguments: ["-qec", command, "/dev/null"])
        XCTAssertTrue(result.out.contains("--device null has no clock"), result.out)
        XCTAssertTrue(result.out.contains("exit=2"), result.out)
    }

    func testCatalogImportOfAFolderSaysItIsAFolder() throws {
        let environment = try isolatedEnvironment()
        let result = try run(["catalog", "import", try temporaryDirectory().path], environment: environment)
        XCTAssertEqual(result.code, 1)
        XCTAssertTrue(result.err.contains("is a folder, not a JSON document"), result.err)
        XCTAssertFalse(result.err.contains("NSCocoaErrorDomain"), result.err)
    }

    func testPlayOptionsAreChecked() throws {
        let result = try run(["play", "--repeat", "sometimes", "a.flac"])
        XCTAssertEqual(result.code, 2)
        XCTAssertTrue(result.err.contains("--repeat takes none, one or all"), result.err)
    }

    func testUsageErrorsNameWhatIsWrong() throws {
        let noID = try run(["catalog", "songs"])
        XCTAssertEqual(noID.code, 2)
        XCTAssertTrue(noID.err.contains("missing ID"), noID.err)
        let limit = try run(["search", "--limit", "99", "x"])
        XCTAssertEqual(limit.code, 2)
        XCTAssertTrue(limit.err.contains("--limit takes a number from 1 to 50, not 99"), limit.err)
    }

    /// `--device null` takes audio as fast as it is written: the player waits for the decoder
    /// instead of writing silence, so going round a song again and again reports no underrun
    /// (it reported hundreds of seconds of "silence" a second). Its own data folder: every round
    /// is a play in the history.
    func testTheNullDeviceWaitsForTheDecoderInsteadOfWritingSilence() throws {
        let song = try temporaryDirectory().appendingPathComponent("short.wav")
        try writeAudioFile(song, TestSignal.tone(hz: 440, frames: 8_820, sampleRate: 44_100, channels: 2))
        let (process, out, _) = try start(["play", "--no-ui", "--device", "null", "--repeat", "all", song.path],
                                          environment: try isolatedEnvironment(), mergingErrors: true)
        // Should Ctrl-C not end it, the test fails instead of waiting for ever.
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { if process.isRunning { process.terminate() } }
        // Round the song 50 times (a line each), then stop it as Ctrl-C would, and read what is
        // left to the end (the tool prints on while it stops: an unread pipe would hold it).
        var printed = ""
        while printed.components(separatedBy: "▶").count <= 50 {
            let data = out.fileHandleForReading.availableData
            if data.isEmpty { break }
            printed += String(decoding: data, as: UTF8.self)
        }
        process.interrupt()
        printed += String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertGreaterThan(printed.components(separatedBy: "▶").count, 50, printed)
        // Interrupted either way a shell reports as 130: handled (exit 130), or — when the 50
        // rounds went by before the tool set its handlers up after its first sound (the null
        // device's two threads run flat out, at real-time priority, on a 2-CPU machine) — ended
        // by the signal itself, as any program is before then.
        let interrupted = (process.terminationReason == .exit && process.terminationStatus == 130)
            || (process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGINT)
        XCTAssertTrue(interrupted, "\(process.terminationReason.rawValue) \(process.terminationStatus): \(printed)")
        XCTAssertFalse(printed.contains("underrun"), printed)
    }

    func testFilesThatAreNotAudioSayWhatTheyAre() throws {
        let folder = try temporaryDirectory()
        let noise = folder.appendingPathComponent("noise.mp3")
        try Data(String(repeating: "these bytes are not audio; ", count: 200).utf8).write(to: noise)
        let headerOnly = folder.appendingPathComponent("empty.wav")
        let writer = try AudioFileWriter(path: headerOnly.path, format: .wav16, sampleRate: 44_100, channelCount: 2)
        try writer.close()
        // Pseudo-random bytes: libmpg123 searches them for frames and has its own say on stderr.
        let random = folder.appendingPathComponent("random.mp3")
        var state: UInt32 = 12_345
        try Data((0..<20_000).map { _ -> UInt8 in state = state &* 1_103_515_245 &+ 12_345; return UInt8(state >> 24) })
            .write(to: random)
        let result = try run(["play", "--no-ui", "--device", "null", noise.path, "/dev/zero", headerOnly.path, random.path])
        XCTAssertEqual(result.code, 4, result.err)
        XCTAssertTrue(result.err.contains("random.mp3: corrupt audio data"), result.err)
        XCTAssertFalse(result.err.contains("Note:") || result.err.contains("MPEG-Header"), "no decoder chatter: \(result.err)")
        XCTAssertTrue(result.err.contains("/dev/zero: cannot be read (it is not a regular file but a device)"), result.err)
        XCTAssertTrue(result.err.contains("empty.wav: holds no audio (0 frames)"), result.err)
        XCTAssertFalse(result.err.contains("File does not exist"), result.err)
        XCTAssertTrue(result.err.contains("noise.mp3: corrupt audio data"), result.err)
    }
}
