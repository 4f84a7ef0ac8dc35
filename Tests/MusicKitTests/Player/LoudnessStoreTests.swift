import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
@testable import MusicKitCore
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
        XCTAssertEqual(store.knownLoudness(ofFile: song.path), kept.replayGain, "what the player gives the engine")

        // Another file at the same path (a new rip): the old measurement does not apply.
        try writeAudioFile(song, TestSignal.tone(hz: 997, frames: 44_100 * 2, sampleRate: 44_100, channels: 2, amplitude: 0.5))
        XCTAssertNil(store.measurement(ofFile: song.path), "a changed file is measured again")

        // A file whose ReplayGain tags say it all is not measured; its tags are kept, until it changes.
        let tagged = directory.appendingPathComponent("tagged.flac")
        try encodeWithFFmpeg(song, to: tagged, codec: "flac", arguments: ["-metadata", "REPLAYGAIN_TRACK_GAIN=-3.00 dB"])
        XCTAssertNil(store.knownLoudness(ofFile: tagged.path), "not read yet")
        store.measureSoon(tagged.path)
        store.waitForMeasurements()
        XCTAssertNil(store.measurement(ofFile: tagged.path))
        XCTAssertEqual(store.knownLoudness(ofFile: tagged.path), LoudnessTags(trackGainDB: -3))
        try encodeWithFFmpeg(song, to: tagged, codec: "flac", arguments: ["-metadata", "REPLAYGAIN_TRACK_GAIN=-5.00 dB"])
        XCTAssertNil(store.knownLoudness(ofFile: tagged.path), "retagged: read again")
    }

    /// An album's songs measured together (a library scan's `--loudness`): each keeps its own
    /// loudness and the album's, which is EBU R128 over the album as one programme — what FFmpeg's
    /// meter gives for the songs played one after the other — not an average of the songs.
    func testAnAlbumIsMeasuredAsOneProgrammeAndKeptWithEachSong() throws {
        let environment = try useTemporaryEnvironment(self)
        let directory = try makeTemporaryDirectory(self)
        let store = try XCTUnwrap(LoudnessStore.open(environment))
        let loud = directory.appendingPathComponent("1 loud.flac"), quiet = directory.appendingPathComponent("2 quiet.flac")
        // 8 dB apart, within EBU R128's relative gate (10 LU), so both count.
        try writeAudioFile(loud, TestSignal.tone(hz: 997, frames: 44_100 * 3, sampleRate: 44_100, channels: 2, amplitude: 0.5))
        try writeAudioFile(quiet, TestSignal.tone(hz: 997, frames: 44_100 * 3, sampleRate: 44_100, channels: 2, amplitude: 0.2))
        XCTAssertEqual(store.measureAlbumNow([loud.path, quiet.path]), [.measured, .measured])

        let both = directory.appendingPathComponent("album.flac")
        XCTAssertEqual(try runTool("/usr/bin/ffmpeg", ["-nostdin", "-loglevel", "error", "-i", loud.path, "-i", quiet.path,
                                                       "-filter_complex", "concat=n=2:v=0:a=1", both.path], environment: [:]).code, 0)
        let reference = try ffmpegIntegratedLoudness(both)
        for song in [loud, quiet] {
            let kept = try XCTUnwrap(store.measurement(ofFile: song.path), song.lastPathComponent)
            let alone = try XCTUnwrap(try LoudnessMeter.measure(path: song.path))
            XCTAssertEqual(kept.integratedLUFS, alone.integratedLUFS, accuracy: 0.001, "the song's own loudness")
            // FFmpeg's meter also has the blocks that straddle the two songs: a few of 56.
            XCTAssertEqual(try XCTUnwrap(kept.albumIntegratedLUFS), reference.lufs, accuracy: 0.2, reference.summary)
            XCTAssertEqual(try XCTUnwrap(kept.albumTruePeak), 0.5, accuracy: 0.02, "the loudest song's peak")
        }
        let loudAlone = try XCTUnwrap(store.measurement(ofFile: loud.path)).integratedLUFS
        XCTAssertLessThan(try XCTUnwrap(store.measurement(ofFile: loud.path)?.albumIntegratedLUFS), loudAlone - 1,
                          "the quiet song brings the album below its loud song")
        XCTAssertEqual(store.measureAlbumNow([loud.path, quiet.path]), [.known, .known], "measured once")

        // With one tagged song, the tags are the album's word: the others are measured alone.
        let tagged = directory.appendingPathComponent("3 tagged.flac")
        try encodeWithFFmpeg(quiet, to: tagged, codec: "flac", arguments: ["-metadata", "REPLAYGAIN_TRACK_GAIN=-3.00 dB"])
        let other = directory.appendingPathComponent("4 other.flac")
        try writeAudioFile(other, TestSignal.tone(hz: 660, frames: 44_100, sampleRate: 44_100, channels: 2, amplitude: 0.3))
        XCTAssertEqual(store.measureAlbumNow([tagged.path, other.path]), [.tagged, .measured])
        XCTAssertNil(store.measurement(ofFile: other.path)?.albumIntegratedLUFS)
    }

    /// With the account's Sound Check on, a catalog import has its local previews (the bundled
    /// ones) measured in the background, so that they play normalized from their first play.
    func testACatalogImportHasItsLocalPreviewsMeasuredWithSoundCheckOn() throws {
        let environment = try useTemporaryEnvironment(self)
        try MusicAccountSettings.update { $0.soundCheck = .track }
        let delay = LoudnessStore.importMeasuringDelaySeconds
        LoudnessStore.importMeasuringDelaySeconds = 0
        defer { LoudnessStore.importMeasuringDelaySeconds = delay }
        let status = try MusicCatalogIndex.prepare(environment: environment)
        XCTAssertNotNil(status.rebuildReason, "imported")
        let store = try XCTUnwrap(LoudnessStore.open(environment))
        store.waitForMeasurements()
        let previews = try FileManager.default.contentsOfDirectory(at: try XCTUnwrap(environment.assetsDirectory)
            .appendingPathComponent("Previews"), includingPropertiesForKeys: nil).filter { $0.pathExtension == "ogg" }
        XCTAssertGreaterThan(previews.count, 10)
        for preview in previews {
            XCTAssertNotNil(store.measurement(ofFile: preview.path), preview.lastPathComponent)
        }
    }
}
