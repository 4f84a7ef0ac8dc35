import PlatformSupport
import CMPG123
import Foundation
import Glibc

// The one wrapper around libmpg123 (CMPG123): MPEG audio (MP3, MP2) decoded with its own
// handle, so that its messages are turned off through its API (`MPG123_QUIET`) rather than by
// taking the process's stderr away while a file opens, which is what reading MP3 through
// libsndfile (whose libmpg123 handle prints "Note: Illegal Audio-MPEG-Header …") needed.
// libmpg123.so.0 is opened when the first MPEG file is (see DynamicLibrary).

/// An MPEG audio file decoded by libmpg123 to interleaved 32-bit float frames, gapless (the
/// encoder's delay and padding from a LAME/Xing header are trimmed), seeking to the frame.
///
/// Thread safety: one thread at a time. Real-time safety: none (file I/O); used on the
/// decoder thread only.
final class MPG123Reader: AudioFileReader {
    let path: String
    let info: AudioFileInfo
    let declaredFrameCount: Int
    private let library: LibMPG123
    private let handle: OpaquePointer
    private let channelCount: Int
    /// Frames decoded so far (the read position).
    private var position = 0

    /// Whether `path` holds MPEG audio for this reader: an `.mp3`/`.mp2`/`.mpga` name, or, for a
    /// name that is none of the formats read here, an ID3 tag or an MPEG frame sync at its start
    /// (`head`: its first bytes, read once by `AudioFileDecoder`).
    static func recognizes(_ path: String, head: [UInt8]) -> Bool {
        let fileExtension = (path as NSString).pathExtension.lowercased()
        if ["mp3", "mp2", "mpga"].contains(fileExtension) { return true }
        if AudioFileDecoder.fileExtensions.contains(fileExtension) { return false }
        guard head.count >= 3 else { return false }
        return head.starts(with: [0x49, 0x44, 0x33]) || (head[0] == 0xFF && head[1] & 0xE0 == 0xE0)
    }

    /// Opens `path`, a readable regular file with bytes (`AudioFileDecoder` checked).
    init(path: String) throws(DecoderError) {
        self.path = path
        let library: LibMPG123
        switch LibMPG123.loaded {
        case .success(let loaded): library = loaded
        case .failure(let failure): throw DecoderError(path: path, reason: .unsupportedFormat(failure.description))
        }
        var error: Int32 = 0
        guard let handle = library.new(nil, &error) else {
            throw DecoderError(path: path, reason: .unsupportedFormat("libmpg123: \(String(cString: library.plainError(error)))"))
        }
        // Quiet (every failure is a DecoderError), float out, gapless, at the file's own rate
        // (the engine converts), and no "Frankenstein" stream glued from several files.
        let flags = Int(MPG123_QUIET.rawValue | MPG123_FORCE_FLOAT.rawValue | MPG123_GAPLESS.rawValue
                        | MPG123_NO_FRANKENSTEIN.rawValue)
        _ = library.param(handle, Int32(MPG123_ADD_FLAGS.rawValue), flags, 0)
        _ = library.param(handle, Int32(MPG123_REMOVE_FLAGS.rawValue), Int(MPG123_AUTO_RESAMPLE.rawValue), 0)
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        func failing(_ reason: DecoderError.Reason) -> DecoderError {
            _ = library.close(handle)
            library.delete(handle)
            return DecoderError(path: path, reason: reason)
        }
        guard library.open(handle, path) == MPG123_OK.rawValue,
              library.getFormat(handle, &rate, &channels, &encoding) == MPG123_OK.rawValue else {
            throw failing(.corrupt("no MPEG audio found in the data (libmpg123: \(String(cString: library.error(handle))))"))
        }
        guard rate > 0, channels > 0, encoding == Int32(MPG123_ENC_FLOAT_32.rawValue) else {
            throw failing(.corrupt("declares \(channels) channels at \(rate) Hz"))
        }
        // From the LAME/Xing header when there is one (exact); else an estimate from the size.
        let length = library.length(handle)
        guard length > 0 else { throw failing(.noAudio) }
        self.library = library
        self.handle = handle
        channelCount = Int(channels)
        declaredFrameCount = length
        info = MPG123Reader.readInfo(library, handle, rate: rate, channels: Int(channels), frames: length)
    }

    deinit {
        _ = library.close(handle)
        library.delete(handle)
    }

    /// The format's name and the ID3 tags (v2, else v1) libmpg123 found before the first frame.
    private static func readInfo(_ library: LibMPG123, _ handle: OpaquePointer, rate: Int, channels: Int, frames: Int) -> AudioFileInfo {
        var frameInfo = mpg123_frameinfo2()
        let layer = library.info(handle, &frameInfo) == MPG123_OK.rawValue ? Int(frameInfo.layer) : 3
        var info = AudioFileInfo(sampleRate: rate, channelCount: channels, frameCount: frames,
                                 formatName: "MPEG (MPEG Layer \(layer == 1 ? "I" : layer == 2 ? "II" : "III"))")
        var v1: UnsafeMutablePointer<mpg123_id3v1>?
        var v2: UnsafeMutablePointer<mpg123_id3v2>?
        guard library.metaCheck(handle) & MPG123_ID3 != 0, library.id3(handle, &v1, &v2) == MPG123_OK.rawValue else { return info }
        func text(_ string: UnsafeMutablePointer<mpg123_string>?) -> String? {
            guard let string, let bytes = string.pointee.p, string.pointee.fill > 1 else { return nil }
            return AudioFileDecoder.tagText(UnsafePointer(bytes))
        }
        func fixed<T>(_ field: T) -> String? {
            withUnsafeBytes(of: field) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self).withCString(AudioFileDecoder.tagText)
            }
        }
        if let tag = v2?.pointee {
            info.title = text(tag.title)
            info.artist = text(tag.artist)
            info.album = text(tag.album)
            info.genre = text(tag.genre)
            info.date = text(tag.year)
            info.comment = text(tag.comment)
            for index in 0..<tag.texts {
                guard let field = tag.text?[index] else { continue }
                let id = withUnsafeBytes(of: field.id) { String(decoding: $0, as: UTF8.self) }
                var value = field.text
                let number = text(&value).flatMap { Int($0.split(separator: "/").first ?? "") }
                switch id {
                case "TRCK": info.trackNumber = number
                case "TPOS": info.discNumber = number
                case "TPE2": info.albumArtist = text(&value)
                case "TDRC", "TYER": info.date = info.date ?? text(&value)  // ID3v2.4's recording time, v2.3's year
                default: break
                }
            }
        }
        if let tag = v1?.pointee, withUnsafeBytes(of: tag.tag, { Array($0) }) == Array("TAG".utf8) {
            info.title = info.title ?? fixed(tag.title)
            info.artist = info.artist ?? fixed(tag.artist)
            info.album = info.album ?? fixed(tag.album)
            info.date = info.date ?? fixed(tag.year)
        }
        return info
    }

    func read(into buffer: UnsafeMutablePointer<Float>, frameCount: Int) throws(DecoderError) -> Int {
        var done = 0
        var filled = 0
        let bytesPerFrame = channelCount * MemoryLayout<Float>.size
        while filled < frameCount {
            let target = UnsafeMutableRawPointer(buffer + filled * channelCount)
            let result = library.read(handle, target, (frameCount - filled) * bytesPerFrame, &done)
            filled += done / bytesPerFrame
            if result == MPG123_DONE.rawValue { break }
            if result == MPG123_NEW_FORMAT.rawValue {
                var rate = 0
                var channels: Int32 = 0
                var encoding: Int32 = 0
                _ = library.getFormat(handle, &rate, &channels, &encoding)
                if rate != info.sampleRate || Int(channels) != channelCount {
                    throw DecoderError(path: path, reason: .corrupt("the stream changes to \(channels) channels at \(rate) Hz at frame \(position + filled)"))
                }
                continue
            }
            if result != MPG123_OK.rawValue {
                throw DecoderError(path: path, reason: .corrupt(String(cString: library.error(handle))))
            }
            if done == 0 { break }
        }
        position += filled
        // A clean end well before the declared length: cut short. The length of a file without
        // a LAME/Xing header is an estimate, so a second's difference is allowed.
        if filled == 0 && position + info.sampleRate < declaredFrameCount {
            throw DecoderError(path: path, reason: .truncated(expectedFrames: declaredFrameCount, decodedFrames: position))
        }
        return filled
    }

    func seek(toFrame frame: Int) throws(DecoderError) -> Int {
        let target = max(0, min(frame, info.frameCount))
        let result = library.seek(handle, target, SEEK_SET)
        if result < 0 {
            throw DecoderError(path: path, reason: .corrupt("cannot seek to frame \(target): \(String(cString: library.error(handle)))"))
        }
        position = result
        return position
    }

    static func loadLibrary() { _ = LibMPG123.loaded }

    /// libmpg123's version, e.g. "libmpg123 API 47", or why it is missing.
    static var libraryVersion: String {
        switch LibMPG123.loaded {
        case .success: "libmpg123 API \(MPG123_API_VERSION)"
        case .failure(let failure): failure.description
        }
    }
}

/// libmpg123's functions, looked up once (the 64-bit `off_t` ones: this is a 64-bit build).
private struct LibMPG123: @unchecked Sendable {
    let new: @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<Int32>?) -> OpaquePointer?
    let delete: @convention(c) (OpaquePointer?) -> Void
    let param: @convention(c) (OpaquePointer?, Int32, Int, Double) -> Int32
    let open: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    let close: @convention(c) (OpaquePointer?) -> Int32
    let getFormat: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?,
                                   UnsafeMutablePointer<Int32>?) -> Int32
    let length: @convention(c) (OpaquePointer?) -> Int
    let read: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int, UnsafeMutablePointer<Int>?) -> Int32
    let seek: @convention(c) (OpaquePointer?, Int, Int32) -> Int
    let info: @convention(c) (OpaquePointer?, UnsafeMutablePointer<mpg123_frameinfo2>?) -> Int32
    let metaCheck: @convention(c) (OpaquePointer?) -> Int32
    let id3: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafeMutablePointer<mpg123_id3v1>?>?,
                             UnsafeMutablePointer<UnsafeMutablePointer<mpg123_id3v2>?>?) -> Int32
    let error: @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>
    let plainError: @convention(c) (Int32) -> UnsafePointer<CChar>

    static let loaded: Result<LibMPG123, DynamicLibrary.Failure> = DynamicLibrary.table("libmpg123.so.0") { function throws(DynamicLibrary.Failure) in
        LibMPG123(new: try function("mpg123_new"), delete: try function("mpg123_delete"), param: try function("mpg123_param"),
                  open: try function("mpg123_open_64"), close: try function("mpg123_close"),
                  getFormat: try function("mpg123_getformat"), length: try function("mpg123_length_64"),
                  read: try function("mpg123_read"), seek: try function("mpg123_seek_64"), info: try function("mpg123_info2"),
                  metaCheck: try function("mpg123_meta_check"), id3: try function("mpg123_id3"),
                  error: try function("mpg123_strerror"), plainError: try function("mpg123_plain_strerror"))
    }
}
