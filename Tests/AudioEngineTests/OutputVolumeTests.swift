@testable import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import XCTest

/// The engine's volume as heard at the test sink's monitor: on the native PulseAudio stream it
/// is the stream's volume at the server (the samples untouched, what `pactl` shows), through
/// ALSA's pulse plugin the engine's own gain; either way the level follows a change at once,
/// not a deep buffer (750 ms) later. The renderer's handling of the gain, frame by frame, is in
/// `AudioRendererTests`.
final class OutputVolumeTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
    }

    /// The loudest sample in `chunks`.
    private func peak(_ chunks: [MonitorRecorder.Chunk]) -> Int {
        chunks.lazy.flatMap(\.samples).map { abs(Int($0)) }.max() ?? 0
    }

    private func assertVolumeIsHeardAtOnce(device: String, checkServer: Bool) throws {
        let recorder = try SharedMonitor.recorder()
        let url = directory.appendingPathComponent("tone.flac")
        try writeAudioFile(url, TestSignal.tone(hz: 440, frames: 44_100 * 6, sampleRate: 44_100, channels: 2, amplitude: 0.5))
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: device))
        engine.setQueue(AudioEntryList(paths: [url.path]))
        defer { engine.stop() }
        let began = monotonicNanoseconds()
        try engine.play()
        XCTAssertNotNil(recorder.firstSound(after: began), "\(device): the tone is heard")
        Thread.sleep(forTimeInterval: 0.4)
        let full = peak(recorder.chunks(arrivedAfter: monotonicNanoseconds() - 200_000_000))
        XCTAssertGreaterThan(full, 15_000, "\(device): the tone at full volume (0.5 of full scale)")

        let changed = monotonicNanoseconds()
        engine.setVolume(0.5)  // −18 dB: 0.125 in amplitude
        Thread.sleep(forTimeInterval: 0.5)
        let after = recorder.chunks(arrivedAfter: changed)
        // From the first quiet chunk on, every chunk is quiet: the change took, at once, and held.
        let quietFrom = try XCTUnwrap(after.lastIndex { peak([$0]) > full / 4 }.map { $0 + 1 } ?? 0 as Int?)
        XCTAssertLessThan(quietFrom, after.count, "\(device): the level fell")
        guard quietFrom < after.count else { return }
        let heardAfterMilliseconds = Double(after[quietFrom].arrivalNanoseconds - changed) / 1e6
        print("\(device): volume change heard after \(heardAfterMilliseconds) ms")
        XCTAssertLessThan(heardAfterMilliseconds, 300, "\(device): heard at once, not after the device's buffer")
        let quiet = peak(Array(after[quietFrom...].dropFirst(5)))
        let ratio = Double(quiet) / Double(full)
        XCTAssertEqual(20 * log10(ratio), -18.06, accuracy: 1, "\(device): 50 % is −18 dB, as the desktop's mixer has it")
        if checkServer {
            let streams = try PulseSinkInput.ofThisProcess()
            XCTAssertFalse(streams.isEmpty)
            XCTAssertTrue(streams.allSatisfy { $0.volume == 32_768 }, "the streams' own volume is 50 %: \(streams)")
        }
        XCTAssertEqual(engine.statistics.underruns, 0, device)
    }

    func testTheNativeStreamsVolumeIsSetAtTheServerAndHeardAtOnce() throws {
        try assertVolumeIsHeardAtOnce(device: try AudioTestEnvironment.requireNativePulse(), checkServer: true)
    }

    /// A volume set in the desktop's mixer (here `pactl`, on either of the two streams) is the
    /// engine's: reported as an event, kept as `volume`, and not taken back by the engine.
    func testAVolumeSetInTheMixerIsTheEnginesAndReported() throws {
        let device = try AudioTestEnvironment.requireNativePulse()
        let url = directory.appendingPathComponent("tone.flac")
        try writeAudioFile(url, TestSignal.tone(hz: 440, frames: 44_100 * 6, sampleRate: 44_100, channels: 2, amplitude: 0.5))
        let engine = AudioEngine(configuration: AudioTestEnvironment.sinkConfiguration(deviceName: device))
        engine.setQueue(AudioEntryList(paths: [url.path]))
        let recorder = EventRecorder(engine)
        defer { engine.stop() }
        engine.setVolume(0.8)
        try engine.play()
        let streams = try PulseSinkInput.waitFor("the playing stream and its spare") { $0.count == 2 && $0.allSatisfy { !$0.corked } }
        XCTAssertEqual(streams.count, 2, "the playing stream and its spare: \(streams)")
        XCTAssertTrue(streams.allSatisfy { $0.volume == 52_429 }, "0.8 on both: \(streams)")
        let environment = ["PULSE_SERVER": ProcessInfo.processInfo.environment["PULSE_SERVER"] ?? ""]
        let reported = { recorder.events.filter { $0 == .volumeChanged(26_214.0 / 65_536) }.count }
        for (number, stream) in streams.enumerated() {
            XCTAssertEqual(try runTool("/usr/bin/pactl", ["set-sink-input-volume", "\(stream.index)", "40%"], environment: environment).code, 0)
            let deadline = Date(timeIntervalSinceNow: 5)
            while reported() <= number && Date() < deadline { usleep(10_000) }
            XCTAssertEqual(reported(), number + 1, "the mixer's 40 % on stream \(number + 1) reported once: \(recorder.events)")
            XCTAssertEqual(engine.volume ?? -1, 0.4, accuracy: 0.0001)
            engine.setVolume(0.8)
            Thread.sleep(forTimeInterval: 0.2)
            XCTAssertTrue(try PulseSinkInput.ofThisProcess().allSatisfy { $0.volume == 52_429 }, "the engine's own change holds")
            XCTAssertEqual(engine.volume, 0.8, "its own change is not reported back as another's")
        }
    }

    /// Through ALSA (here its pulse plugin, whose stream the engine cannot set a volume on) the
    /// engine scales the samples and rewrites what the device held.
    func testAnALSADevicesVolumeIsTheEnginesGainAndHeardAtOnce() throws {
        try assertVolumeIsHeardAtOnce(device: try AudioTestEnvironment.requirePulse(), checkServer: false)
    }
}
