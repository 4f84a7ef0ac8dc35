import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
@testable import MusicKit
import XCTest

/// Songs' measured loudness kept by file (`LoudnessStore`): measured once, forgotten when the
/// file changes, skipped for files whose tags say it, and a broken store file made anew.
final class LoudnessStoreTests: XCTestCase {
    func testAMeasurementIsKeptUntilTheFileChangesAndABrokenStoreIsMadeAnew() throws {
        let environment = try useTemporaryEnvironment(self)
        let directory = try makeTemporaryDirectory(self)
        // A store file that is not a database: only measurements, so it is replaced.
        try FileManager.default.createDirectory(at: environment.dataDirectory, withIntermediateDirectories: true)
        try Data("not a database, written by something else".utf8)
            .write(to: environment.dataDirectory.appendingPathComponent(LoudnessStore.fileName))
        let store = try XCTUnwrap(LoudnessStore.open(environment))

        let song = directory.appendingPathComponent("song.flac")
        try writeAudioFile(song, TestSignal.tone(hz: 997, frames: 44_100, sampleRate: 44_100, channels: 2, amplitude: 0.25))
        XCTAssertNil(store.measurement(ofFile: song.path), "not measured yet")
        store.measureSoon(song.path)
        store.waitForMeasurements()
        let kept = try XCTUnwrap(store.measurement(ofFile: song.path))
        XCTAssertEqual(kept, try LoudnessMeter.measure(path: song.path))

        // Another file at the same path (a new rip): the old measurement does not apply.
        try writeAudioFile(song, TestSignal.tone(hz: 997, frames: 44_100 * 2, sampleRate: 44_100, channels: 2, amplitude: 0.5))
        XCTAssertNil(store.measurement(ofFile: song.path), "a changed file is measured again")

        // A file whose ReplayGain tags say it all is not measured.
        let tagged = directory.appendingPathComponent("tagged.flac")
        try encodeWithFFmpeg(song, to: tagged, codec: "flac", arguments: ["-metadata", "REPLAYGAIN_TRACK_GAIN=-3.00 dB"])
        store.measureSoon(tagged.path)
        store.waitForMeasurements()
        XCTAssertNil(store.measurement(ofFile: tagged.path))
    }
}
