@testable import AudioEngine
import AudioTestSupport
import AudioMeasurement
import Foundation
import XCTest

/// The native PulseAudio output's switch to its spare stream at a skip or a seek while playing
/// (`PulseStream`): the server drops nothing of the new entry, and the two streams are one for
/// the desktop's mixer.
final class PulseAudioSpareStreamTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
        _ = try AudioTestEnvironment.requireNativePulse()
    }

    /// Four 2 s tones to skip through.
    private func tones() throws -> [String] {
        try (0..<4).map { index in
            let url = directory.appendingPathComponent("tone\(index).flac")
            try writeAudioFile(url, TestSignal.tone(hz: 330 + 110 * Double(index), frames: 44_100 * 2,
                                                    sampleRate: 44_100, channels: 2))
            return url.path
        }
    }

    /// The spare is there and runs empty: two streams, neither corked.
    private func spareIsReady(_ streams: [PulseSinkInput]) -> Bool {
        streams.count == 2 && streams.allSatisfy { !$0.corked }
    }

    /// The server's debug log, for three skips: each switch ends exactly one underrun (the
    /// spare's, whose render queue holds only silence then, so its frames are taken from the
    /// first). Played the way that loses frames (one stream corked, written, uncorked), a
    /// second end of underrun dropped the ~80 frames rendered after the first (Benchmarks/RESULTS.md,
    /// 2026-12-03) — the same landing at the monitor as a clean start, so only the log tells.
    /// With a recorder on the sink's monitor at 2 ms, as in every test that listens there: with
    /// none holding the sink's latency down, the deep buffer lets the sink render ~380 ms ahead,
    /// past the switch's first write, and each write after it ends an underrun again (the
    /// server rewinds by the silence it had rendered for the stream), so the count no longer
    /// tells the switch's own rewinds apart.
    func testEachSwitchEndsOneUnderrunAtTheServer() throws {
        let server = try PrivatePulseServer(in: directory, sinkName: "switch_test", debugLog: true)
        defer { server.stop() }
        try server.start()
        let previous = ProcessInfo.processInfo.environment["PULSE_SERVER"]
        setenv("PULSE_SERVER", server.address, 1)
        defer { if let previous { setenv("PULSE_SERVER", previous, 1) } else { unsetenv("PULSE_SERVER") } }

        let recorder = try MonitorRecorder(source: "switch_test.monitor", latencyMilliseconds: 2)
        defer { recorder.stop() }
        recorder.warmUp(seconds: 0.5)
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: "pulseaudio:switch_test"))
        engine.setQueue(AudioEntryList(paths: try tones()))
        try engine.play()
        for skip in 1...3 {
            try PulseSinkInput.waitFor("the spare is ready before skip \(skip)", server: server.address, spareIsReady)
            engine.skipToNextEntry()
            // The switch is made: the stream that played is corked.
            try PulseSinkInput.waitFor("skip \(skip) switched streams", server: server.address) { $0.contains(where: \.corked) }
        }
        try PulseSinkInput.waitFor("the last switch is over", server: server.address, spareIsReady)
        XCTAssertEqual(engine.statistics.underruns, 0)
        engine.stop()
        // The stop's corks reach the server after `stop()` returns (libpulse sends them from
        // its own thread): the log is read once the server has taken both, or after 5 s.
        func corks() -> [String] {
            let log = (try? String(contentsOf: server.logURL, encoding: .utf8)) ?? ""
            return Array(log.components(separatedBy: "Requesting rewind due to corking").dropFirst())
        }
        let deadline = Date(timeIntervalSinceNow: 5)
        while corks().count < 5 && Date() < deadline { usleep(20_000) }
        server.stop()

        // What follows each cork of a playing stream: the three switches, then the stop.
        let afterCorks = corks()
        XCTAssertEqual(afterCorks.count, 5, "three switches cork a stream, the stop both (the spare too: see PulseStream.corkSpare); "
                       + "after the last cork the server logged: \(afterCorks.last?.suffix(3_000) ?? "")")
        for (index, segment) in afterCorks.prefix(3).enumerated() {
            let endsOfUnderrun = segment.components(separatedBy: "Requesting rewind due to end of underrun").count - 1
            XCTAssertEqual(endsOfUnderrun, 1, "switch \(index + 1) ends the spare's underrun once (the log: \(segment.suffix(2_000)))")
        }
    }

    /// The desktop's mixer tells the two streams apart (issue #44 item 13): the one that plays
    /// is "Music", the spare "Music (standby for the next song)", and the names follow the
    /// roles when a skip switches them.
    func testTheSpareIsNamedAsTheStandbyAndTheNamesFollowASwitch() throws {
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: try AudioTestEnvironment.requireNativePulse()))
        engine.setQueue(AudioEntryList(paths: try tones()))
        try engine.play()
        defer { engine.stop() }
        try PulseSinkInput.waitFor("the spare is ready", spareIsReady)
        let before = try PulseSinkInput.ofThisProcess()
        XCTAssertEqual(Set(before.compactMap(\.name)), ["Music", "Music (standby for the next song)"], "\(before)")
        let playing = try XCTUnwrap(before.first { $0.name == "Music" }?.index)
        engine.skipToNextEntry()
        try PulseSinkInput.waitFor("the names swapped with the roles") { streams in
            streams.count == 2 && streams.contains { $0.index == playing && $0.name == "Music (standby for the next song)" }
                && streams.contains { $0.index != playing && $0.name == "Music" }
        }
    }

    /// A volume, mute or sink set on either stream (as pavucontrol does) is set on the other,
    /// so the entry after a skip plays as the person set it.
    ///
    /// Both sinks are recorded at 2 ms, as every sink a test plays on: a null sink with nothing
    /// holding its latency down takes the stream's whole latency (the deep buffer less two
    /// refills) in one block, so right after the skip's switch it asks for more than the new
    /// stream has been written yet and the stream underruns, whether the engine is late or not.
    func testVolumeMuteAndSinkSetOnOneStreamFollowOnTheOther() throws {
        _ = try SharedMonitor.recorder()
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: try AudioTestEnvironment.requireNativePulse()))
        engine.setQueue(AudioEntryList(paths: try tones()))
        try engine.play()
        defer { engine.stop() }
        try PulseSinkInput.waitFor("the spare is ready", spareIsReady)
        let streams = try PulseSinkInput.ofThisProcess()
        guard streams.count == 2 else { return }
        let environment = ["PULSE_SERVER": ProcessInfo.processInfo.environment["PULSE_SERVER"] ?? ""]

        XCTAssertEqual(try runTool("/usr/bin/pactl", ["set-sink-input-volume", "\(streams[0].index)", "40%"], environment: environment).code, 0)
        XCTAssertEqual(try runTool("/usr/bin/pactl", ["set-sink-input-mute", "\(streams[0].index)", "1"], environment: environment).code, 0)
        try PulseSinkInput.waitFor("both at 40%, muted") { $0.count == 2 && $0.allSatisfy { $0.volume == 26_214 && $0.mute } }
        XCTAssertEqual(try runTool("/usr/bin/pactl", ["set-sink-input-mute", "\(streams[1].index)", "0"], environment: environment).code, 0)
        try PulseSinkInput.waitFor("both unmuted, from the other") { $0.count == 2 && $0.allSatisfy { !$0.mute && $0.volume == 26_214 } }

        let other = try LoadedNullSink(name: "musickit_test_other")
        defer { other.unload() }
        let otherRecorder = try MonitorRecorder(source: other.monitor, latencyMilliseconds: 2)
        defer { otherRecorder.stop() }
        otherRecorder.warmUp(seconds: 0.2)
        XCTAssertEqual(try runTool("/usr/bin/pactl", ["move-sink-input", "\(streams[1].index)", other.name],
                                   environment: environment).code, 0)
        try PulseSinkInput.waitFor("both moved") { $0.count == 2 && $0[0].sink == $0[1].sink && $0[0].sink != streams[0].sink }
        XCTAssertEqual(engine.statistics.underruns, 0, "before the skip")

        // The skip switches to the other stream: it plays where, and as loud as, the person set.
        let firstSink = streams[0].sink
        engine.skipToNextEntry()
        try PulseSinkInput.waitFor("after the skip, the spare is ready again", spareIsReady)
        let after = try PulseSinkInput.ofThisProcess()
        XCTAssertTrue(after.allSatisfy { $0.volume == 26_214 && !$0.mute && $0.sink != firstSink }, "\(after)")
        XCTAssertEqual(engine.statistics.underruns, 0)
    }
}
