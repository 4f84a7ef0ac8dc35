import PlatformSupport
import CSndFile
import Foundation
import Glibc

// The one wrapper around libsndfile (CSndFile). Every sf_* call of the project goes through this file,
// through `LibSndFile`'s table: libsndfile.so.1 (and the eight codec libraries it loads) is opened
// when the first file is, not at every program's start (see DynamicLibrary).

/// A file decoded by libsndfile (WAV, FLAC, Ogg Vorbis, Opus, AIFF, ...) to interleaved 32-bit
/// float frames; `AudioFileDecoder` chooses it for everything that is not MP4, AAC or MPEG audio
/// (libmpg123's, MPG123.swift).
///
/// Thread safety: one thread at a time. Real-time safety: none (file I/O); used on the
/// decoder thread only.
final class SndFileReader: AudioFileReader {
    let path: String
    let info: AudioFileInfo
    private let sndfile: LibSndFile
    private let file: OpaquePointer
    /// Frames decoded so far (the read position).
    private var position = 0

    /// Opens `path`, a readable regular file with bytes (`AudioFileDecoder` checked).
    init(path: String) throws(DecoderError) {
        self.path = path
        let sndfile: LibSndFile
        switch LibSndFile.loaded {
        case .success(let library): sndfile = library
        case .failure(let failure): throw DecoderError(path: path, reason: .unsupportedFormat(failure.description))
        }
        self.sndfile = sndfile
        var sfinfo = SF_INFO()
        guard let handle = sndfile.open(path, Int32(SFM_READ), &sfinfo) else {
            let code = sndfile.error(nil)
            var message = String(cString: sndfile.errorText(nil))
            if message.contains("not a regular file") || message.contains("does not exist") {
                // libsndfile says this when a decoder it tried gave up on the data; the file was
                // checked above and is a readable regular file.
                message = "no audio stream found in the data"
            }
            let fileExtension = path.split(separator: ".").last.map { $0.lowercased() } ?? ""
            let reason: DecoderError.Reason
            switch Int(code) {
            case SF_ERR_UNRECOGNISED_FORMAT:
                reason = AudioFileDecoder.fileExtensions.contains(fileExtension)
                    ? .corrupt("not a valid .\(fileExtension) file: \(message)")
                    : .unsupportedFormat(message)
            case SF_ERR_MALFORMED_FILE:
                reason = .corrupt(message)
            case SF_ERR_UNSUPPORTED_ENCODING:
                reason = .unsupportedFormat(message)
            default:
                reason = .corrupt(message)
            }
            throw DecoderError(path: path, reason: reason)
        }
        file = handle
        if sfinfo.channels < 1 || sfinfo.samplerate < 1 {
            _ = sndfile.close(handle)
            throw DecoderError(path: path, reason: .corrupt("declares \(sfinfo.channels) channels at \(sfinfo.samplerate) Hz"))
        }
        if sfinfo.frames == 0 {
            _ = sndfile.close(handle)
            throw DecoderError(path: path, reason: .noAudio)
        }
        // Integer sources are scaled by 1/32768 (16-bit) etc.: exact in Float for up to 24 bits.
        _ = sndfile.command(handle, Int32(SFC_SET_NORM_FLOAT), nil, Int32(SF_TRUE))
        info = SndFileReader.readInfo(sndfile, handle, sfinfo)
        // libsndfile shortens a WAV whose data chunk is cut off to what is there, silently;
        // the header still says how long it should be.
        if sfinfo.format & Int32(SF_FORMAT_TYPEMASK) == Int32(SF_FORMAT_WAV),
           let declared = SndFileReader.declaredWAVFrameCount(path: path), declared > info.frameCount {
            declaredFrameCount = declared
        } else {
            declaredFrameCount = info.frameCount
        }
    }

    /// Frames the file's header promises; more than `info.frameCount` when the file was cut short.
    let declaredFrameCount: Int

    /// The frame count a RIFF/WAVE header declares (data chunk size / block size), or nil.
    static func declaredWAVFrameCount(path: String) -> Int? {
        guard let handle = fopen(path, "rb") else { return nil }
        defer { fclose(handle) }
        var header = [UInt8](repeating: 0, count: 65_536)
        let count = fread(&header, 1, header.count, handle)
        func word(_ offset: Int) -> Int {
            Int(header[offset]) | Int(header[offset + 1]) << 8 | Int(header[offset + 2]) << 16 | Int(header[offset + 3]) << 24
        }
        guard count >= 12, header[0..<4] == [0x52, 0x49, 0x46, 0x46], header[8..<12] == [0x57, 0x41, 0x56, 0x45] else {
            return nil
        }
        var offset = 12
        var blockAlign = 0
        while offset + 8 <= count {
            let id = String(decoding: header[offset..<offset + 4], as: UTF8.self)
            let size = word(offset + 4)
            if id == "fmt " && offset + 22 <= count {
                blockAlign = Int(header[offset + 20]) | Int(header[offset + 21]) << 8
            } else if id == "data" {
                guard blockAlign > 0, size > 0, size != 0xFFFF_FFFF else { return nil }
                return size / blockAlign
            }
            offset += 8 + size + (size & 1)
        }
        return nil
    }

    deinit { _ = sndfile.close(file) }

    private static func readInfo(_ sndfile: LibSndFile, _ handle: OpaquePointer, _ sfinfo: SF_INFO) -> AudioFileInfo {
        func tag(_ type: Int32) -> String? {
            sndfile.getString(handle, type).flatMap(AudioFileDecoder.tagText)
        }
        var format = SF_FORMAT_INFO()
        format.format = sfinfo.format & Int32(SF_FORMAT_TYPEMASK)
        let formatName = sndfile.command(nil, Int32(SFC_GET_FORMAT_INFO), &format, Int32(MemoryLayout<SF_FORMAT_INFO>.size)) == 0
            ? format.name.map { String(cString: $0) } ?? "unknown" : "unknown"
        let track = tag(Int32(SF_STR_TRACKNUMBER)).flatMap { Int($0.split(separator: "/").first ?? "") }
        return AudioFileInfo(sampleRate: Int(sfinfo.samplerate), channelCount: Int(sfinfo.channels),
                             frameCount: Int(sfinfo.frames), formatName: formatName,
                             title: tag(Int32(SF_STR_TITLE)), artist: tag(Int32(SF_STR_ARTIST)),
                             album: tag(Int32(SF_STR_ALBUM)), genre: tag(Int32(SF_STR_GENRE)),
                             trackNumber: track, date: tag(Int32(SF_STR_DATE)),
                             comment: tag(Int32(SF_STR_COMMENT)))
    }

    func read(into buffer: UnsafeMutablePointer<Float>, frameCount: Int) throws(DecoderError) -> Int {
        let decoded = Int(sndfile.readFloatFrames(file, buffer, sf_count_t(frameCount)))
        position += decoded
        if decoded < frameCount {
            let code = sndfile.error(file)
            if code != 0 {
                throw DecoderError(path: path, reason: .corrupt(String(cString: sndfile.errorText(file))))
            }
            // A clean end before the declared length means the file was cut short.
            if decoded == 0 && position < declaredFrameCount {
                throw DecoderError(path: path, reason: .truncated(expectedFrames: declaredFrameCount,
                                                                  decodedFrames: position))
            }
        }
        return decoded
    }

    func seek(toFrame frame: Int) throws(DecoderError) -> Int {
        let target = max(0, min(frame, info.frameCount))
        let result = sndfile.seek(file, sf_count_t(target), SEEK_SET)
        if result < 0 {
            throw DecoderError(path: path, reason: .corrupt("cannot seek to frame \(target)"))
        }
        position = Int(result)
        return position
    }

    /// Loads libsndfile now (see `AudioFileDecoder.loadLibrary(forFileAt:)`).
    static func loadLibrary() { _ = LibSndFile.loaded }

    /// The libsndfile version string, e.g. "libsndfile-1.2.0" (or why the library is missing).
    static var libraryVersion: String {
        switch LibSndFile.loaded {
        case .success(let library): String(cString: library.versionString())
        case .failure(let failure): failure.description
        }
    }
}

/// Why an audio file could not be written.
public struct EncoderError: Error, CustomStringConvertible, Sendable, Equatable {
    public let path: String
    public let message: String
    public var description: String { "\(path): cannot write audio (\(message))" }
}

/// Writes interleaved float frames to an audio file (test signals, generated libraries,
/// offline renders).
///
/// Thread safety: one thread at a time. Real-time safety: none.
public final class AudioFileWriter {
    public enum Format: Sendable, Equatable {
        /// WAV, 16-bit PCM.
        case wav16
        /// FLAC, 16-bit.
        case flac16
        /// Ogg Vorbis; quality 0...1.
        case oggVorbis(quality: Double)
        /// Ogg Opus; quality 0...1.
        case opus(quality: Double)
        /// MPEG layer III; quality 0...1.
        case mp3(quality: Double)

        var sndfileFormat: Int32 {
            switch self {
            case .wav16: Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16)
            case .flac16: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_16)
            case .oggVorbis: Int32(SF_FORMAT_OGG | SF_FORMAT_VORBIS)
            case .opus: Int32(SF_FORMAT_OGG | SF_FORMAT_OPUS)
            case .mp3: Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III)
            }
        }

        var quality: Double? {
            switch self {
            case .wav16, .flac16: nil
            case .oggVorbis(let quality), .opus(let quality), .mp3(let quality): quality
            }
        }
    }

    /// Tags written into the file.
    public struct Tags: Sendable, Equatable {
        public var title: String?
        public var artist: String?
        public var album: String?
        public var genre: String?
        public var trackNumber: Int?
        public var date: String?
        public init(title: String? = nil, artist: String? = nil, album: String? = nil, genre: String? = nil,
                    trackNumber: Int? = nil, date: String? = nil) {
            self.title = title
            self.artist = artist
            self.album = album
            self.genre = genre
            self.trackNumber = trackNumber
            self.date = date
        }
    }

    public let path: String
    public let channelCount: Int
    private let isSixteenBit: Bool
    private let sndfile: LibSndFile
    private var file: OpaquePointer?

    public init(path: String, format: Format, sampleRate: Int, channelCount: Int,
                tags: Tags = Tags()) throws(EncoderError) {
        self.path = path
        self.channelCount = channelCount
        isSixteenBit = format == .wav16 || format == .flac16
        switch LibSndFile.loaded {
        case .success(let library): sndfile = library
        case .failure(let failure): throw EncoderError(path: path, message: failure.description)
        }
        var sfinfo = SF_INFO()
        sfinfo.samplerate = Int32(sampleRate)
        sfinfo.channels = Int32(channelCount)
        sfinfo.format = format.sndfileFormat
        guard let handle = sndfile.open(path, Int32(SFM_WRITE), &sfinfo) else {
            throw EncoderError(path: path, message: String(cString: sndfile.errorText(nil)))
        }
        file = handle
        if var quality = format.quality {
            // libsndfile's compression level runs the other way: 0 is best quality.
            quality = 1 - min(max(quality, 0), 1)
            _ = sndfile.command(handle, Int32(SFC_SET_COMPRESSION_LEVEL), &quality, Int32(MemoryLayout<Double>.size))
        }
        let strings: [(Int32, String?)] = [
            (Int32(SF_STR_TITLE), tags.title), (Int32(SF_STR_ARTIST), tags.artist),
            (Int32(SF_STR_ALBUM), tags.album), (Int32(SF_STR_GENRE), tags.genre),
            (Int32(SF_STR_TRACKNUMBER), tags.trackNumber.map(String.init)), (Int32(SF_STR_DATE), tags.date),
        ]
        for case let (type, value?) in strings { _ = sndfile.setString(handle, type, value) }
    }

    deinit { try? close() }

    /// Appends interleaved frames (`samples.count` must be a multiple of the channel count).
    /// For 16-bit formats the samples are scaled by 32768 (the inverse of what the decoder
    /// does), so samples that are multiples of 1/32768 survive a write and read unchanged.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws(EncoderError) {
        guard let file else { throw EncoderError(path: path, message: "already closed") }
        guard let base = samples.baseAddress, samples.count > 0 else { return }
        let frames = samples.count / channelCount
        let written: sf_count_t
        if isSixteenBit {
            let shorts = samples.map { sample -> Int16 in
                let scaled = (sample * 32_768).rounded()
                return scaled.isNaN ? 0 : Int16(min(max(scaled, -32_768), 32_767))
            }
            written = sndfile.writeShortFrames(file, shorts, sf_count_t(frames))
        } else {
            written = sndfile.writeFloatFrames(file, base, sf_count_t(frames))
        }
        if written != frames {
            throw EncoderError(path: path, message: String(cString: sndfile.errorText(file)))
        }
    }

    public func write(_ samples: [Float]) throws(EncoderError) {
        try samples.withUnsafeBufferPointer { (buffer) throws(EncoderError) in try write(buffer) }
    }

    /// Finishes the file (headers, last pages). Further writes fail.
    public func close() throws(EncoderError) {
        guard let file else { return }
        self.file = nil
        if sndfile.close(file) != 0 {
            throw EncoderError(path: path, message: "closing failed")
        }
    }
}

/// The libsndfile functions this file calls, from libsndfile.so.1 opened at first use.
private struct LibSndFile: @unchecked Sendable {
    // @unchecked: C function pointers, callable from any thread.
    typealias File = OpaquePointer
    let open: @convention(c) (UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<SF_INFO>?) -> File?
    let close: @convention(c) (File?) -> Int32
    let error: @convention(c) (File?) -> Int32
    let errorText: @convention(c) (File?) -> UnsafePointer<CChar>
    let command: @convention(c) (File?, Int32, UnsafeMutableRawPointer?, Int32) -> Int32
    let getString: @convention(c) (File?, Int32) -> UnsafePointer<CChar>?
    let setString: @convention(c) (File?, Int32, UnsafePointer<CChar>?) -> Int32
    let readFloatFrames: @convention(c) (File?, UnsafeMutablePointer<Float>?, sf_count_t) -> sf_count_t
    let writeFloatFrames: @convention(c) (File?, UnsafePointer<Float>?, sf_count_t) -> sf_count_t
    let writeShortFrames: @convention(c) (File?, UnsafePointer<Int16>?, sf_count_t) -> sf_count_t
    let seek: @convention(c) (File?, sf_count_t, Int32) -> sf_count_t
    let versionString: @convention(c) () -> UnsafePointer<CChar>

    static let loaded: Result<LibSndFile, DynamicLibrary.Failure> =
        DynamicLibrary.table("libsndfile.so.1") { function throws(DynamicLibrary.Failure) in
            LibSndFile(
                open: try function("sf_open"), close: try function("sf_close"), error: try function("sf_error"),
                errorText: try function("sf_strerror"), command: try function("sf_command"),
                getString: try function("sf_get_string"), setString: try function("sf_set_string"),
                readFloatFrames: try function("sf_readf_float"), writeFloatFrames: try function("sf_writef_float"),
                writeShortFrames: try function("sf_writef_short"), seek: try function("sf_seek"),
                versionString: try function("sf_version_string"))
        }
}

