@testable import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import XCTest

/// MP4 audio through FFmpeg (files made here by Debian's `ffmpeg`): ALAC bit-exact, AAC
/// trimmed of its priming and padding to the sample (by the edit list, or iTunes' `iTunSMPB`),
/// exact seeks, tags and cover art, and the decoder chosen by the file's content.
final class MP4DecoderTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = try makeTemporaryDirectory(self)
    }

    /// `signal` written as 16-bit WAV and encoded with `codec` into `name.m4a`.
    private func mp4(_ signal: [Float], codec: String, name: String, inputs: [String] = [], arguments: [String] = []) throws -> URL {
        let wav = directory.appendingPathComponent("\(name).wav")
        try writeAudioFile(wav, signal, format: .wav16)
        let url = directory.appendingPathComponent("\(name).m4a")
        try encodeWithFFmpeg(wav, to: url, codec: codec, inputs: inputs, arguments: arguments)
        return url
    }

    /// The offset (in frames, within ±`range`) at which `decoded` best matches `reference`
    /// (left channels, a window in the middle), and the error there relative to the signal.
    private func alignment(_ decoded: [Float], _ reference: [Float], range: Int = 1_200) -> (lag: Int, relativeError: Double) {
        let frames = min(decoded.count, reference.count) / 2
        let window = (frames / 2 - 1_000)..<(frames / 2 + 1_000)
        var best = (lag: 0, error: Double.infinity)
        for lag in -range...range {
            var error = 0.0
            for frame in window {
                let difference = Double(decoded[frame * 2] - reference[(frame + lag) * 2])
                error += difference * difference
            }
            if error < best.error { best = (lag, error) }
        }
        let energy = window.reduce(0.0) { $0 + Double(reference[$1 * 2] * reference[$1 * 2]) }
        return (best.lag, (best.error / energy).squareRoot())
    }

    func testALACDecodesBitExactlyWithItsTagsAndSeeksToTheFrame() throws {
        let signal = TestSignal.sweep(frames: 50_000)
        let url = try mp4(signal, codec: "alac", name: "sweep", arguments: [
            "-metadata", "title=Sweep", "-metadata", "artist=Test Artist", "-metadata", "album=Tones",
            "-metadata", "track=3/9", "-metadata", "genre=Test Signals", "-metadata", "date=2026",
        ])
        let (info, samples) = try decodeAll(url.path)
        XCTAssertEqual(info.formatName, "MPEG-4 (ALAC)")
        XCTAssertEqual(info.sampleRate, 44_100)
        XCTAssertEqual(info.channelCount, 2)
        XCTAssertEqual(info.frameCount, 50_000)
        XCTAssertEqual(samples.count, signal.count)
        XCTAssertTrue(samples == signal, "ALAC decodes to the exact samples encoded")
        XCTAssertEqual([info.title, info.artist, info.album, info.genre, info.date], ["Sweep", "Test Artist", "Tones", "Test Signals", "2026"])
        XCTAssertEqual(info.trackNumber, 3)

        let decoder = try AudioFileDecoder(path: url.path)
        for target in [31_234, 7, 49_000, 0] {
            try decoder.seek(toFrame: target)
            XCTAssertEqual(decoder.position, target)
            let read = try decodeRest(decoder, frameLimit: 700)
            XCTAssertTrue(read == Array(signal[target * 2 ..< min(target + 700, 50_000) * 2]), "from frame \(target) exactly")
        }
    }

    func testAACIsTrimmedToItsFirstAndLastRealSampleByTheEditListOrITunSMPB() throws {
        // 44,617 frames: not a multiple of AAC's 1,024, so the last packet is padded.
        let frames = 44_617
        let signal = TestSignal.sweep(frames: frames, amplitude: 0.5)
        // The edit list's duration is in the movie's timescale: the sample rate, so that it is exact.
        let withEditList = try mp4(signal, codec: "aac", name: "edit-list", arguments: ["-b:a", "192k", "-movie_timescale", "44100"])
        // As iTunes writes it: no edit list; priming (FFmpeg's encoder: 1,024), padding and
        // length in the iTunSMPB tag.
        let padding = (frames + 1_024 + 1_023) / 1_024 * 1_024 - frames - 1_024
        let smpb = String(format: " 00000000 00000400 %08X %016llX", padding, UInt64(frames)) + String(repeating: " 00000000", count: 8)
        let iTunes = try mp4(signal, codec: "aac", name: "itunes", arguments: [
            "-b:a", "192k", "-use_editlist", "0", "-movflags", "use_metadata_tags", "-metadata", "iTunSMPB=\(smpb)",
        ])
        for url in [withEditList, iTunes] {
            let name = url.lastPathComponent
            let (info, samples) = try decodeAll(url.path)
            XCTAssertEqual(info.formatName, "MPEG-4 (AAC)", name)
            XCTAssertEqual(info.frameCount, frames, "\(name): the declared length is the real one")
            XCTAssertEqual(samples.count / 2, frames, "\(name): no padding after the last real sample")
            let (lag, error) = alignment(samples, signal)
            XCTAssertEqual(lag, 0, "\(name): the first decoded frame is the signal's first (no priming)")
            XCTAssertLessThan(error, 0.1, "\(name): the decoded signal is the encoded one")

            // A seek lands on the frame asked for (the decoder's pre-roll dropped).
            let decoder = try AudioFileDecoder(path: url.path)
            try decoder.seek(toFrame: 20_000)
            let tail = try decodeRest(decoder)
            XCTAssertEqual(tail.count / 2, frames - 20_000, name)
            let seeked = alignment(tail, Array(signal[40_000...]), range: 200)
            XCTAssertEqual(seeked.lag, 0, "\(name): after a seek to frame 20,000 the first frame is 20,000")
            XCTAssertLessThan(seeked.relativeError, 0.1, name)
        }
    }

    func testAnMP4FileIsDecodedByItsContentWhateverItsName() throws {
        let signal = TestSignal.sweep(frames: 5_000)
        let url = try mp4(signal, codec: "alac", name: "real")
        for name in ["misnamed.flac", "no-extension"] {
            let copy = directory.appendingPathComponent(name)
            try FileManager.default.copyItem(at: url, to: copy)
            let (info, samples) = try decodeAll(copy.path)
            XCTAssertEqual(info.formatName, "MPEG-4 (ALAC)", name)
            XCTAssertTrue(samples == signal, name)
        }
    }

    func testTheCoverStoredInTheFileIsRead() throws {
        let cover = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Assets/Artwork/angelic-asylum.png")
        let url = try mp4(TestSignal.sweep(frames: 5_000), codec: "alac", name: "covered", inputs: ["-i", cover.path],
                          arguments: ["-map", "0:a", "-map", "1:v", "-c:v", "copy", "-disposition:v", "attached_pic"])
        let decoder = try AudioFileDecoder(path: url.path)
        XCTAssertEqual(decoder.coverArt, try Data(contentsOf: cover), "the PNG as stored")
        XCTAssertEqual(try decodeRest(decoder).count, 10_000, "the picture is not taken for audio")
        XCTAssertNil(try AudioFileDecoder(path: try mp4(TestSignal.sweep(frames: 100), codec: "alac", name: "bare").path).coverArt)
    }

    func testACutShortMP4IsReportedNotPlayedAsComplete() throws {
        let signal = TestSignal.sweep(frames: 44_100)
        // The index (moov) first, as streaming files have it: the cut loses audio, not the index.
        let url = try mp4(signal, codec: "alac", name: "whole", arguments: ["-movflags", "+faststart"])
        let data = try Data(contentsOf: url)
        let cut = directory.appendingPathComponent("cut.m4a")
        try data.prefix(data.count * 6 / 10).write(to: cut)
        XCTAssertThrowsError(try decodeAll(cut.path)) { error in
            guard let error = error as? DecoderError, case .truncated(let expected, let decoded) = error.reason else {
                return XCTFail("\(error)")
            }
            XCTAssertEqual(expected, 44_100)
            XCTAssertLessThan(decoded, 44_100 * 7 / 10)
            XCTAssertTrue(error.description.hasPrefix(cut.path), error.description)
        }
        // The index last (ffmpeg's default): cut off, it is not an MP4 file that can be read.
        let indexLast = try mp4(signal, codec: "alac", name: "index-last")
        let head = directory.appendingPathComponent("head.m4a")
        try Data(contentsOf: indexLast).prefix(data.count / 2).write(to: head)
        XCTAssertThrowsError(try AudioFileDecoder(path: head.path)) { error in
            guard let error = error as? DecoderError, case .corrupt = error.reason else { return XCTFail("\(error)") }
        }
    }
}
