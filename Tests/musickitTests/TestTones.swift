import AudioEngine
import Foundation

/// Writes a sine tone as 16-bit stereo FLAC with tags: a song for the command-line tests.
func writeTone(to url: URL, hz: Double, seconds: Double, title: String, artist: String = "Test Tones",
               album: String? = nil, trackNumber: Int? = nil) throws {
    let frames = Int(seconds * 44_100)
    let samples = (0..<frames).flatMap { frame -> [Float] in
        let value = Float(0.4 * sin(2 * Double.pi * hz * Double(frame) / 44_100))
        return [value, value]
    }
    let writer = try AudioFileWriter(path: url.path, format: .flac16, sampleRate: 44_100, channelCount: 2,
                                     tags: .init(title: title, artist: artist, album: album, trackNumber: trackNumber))
    try writer.write(samples)
    try writer.close()
}
