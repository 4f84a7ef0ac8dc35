import Foundation
import Glibc
import Synchronization

// What the engine decodes audio files with: one reader per file, chosen by what the file's
// first bytes are (not its name): FFmpeg (FFmpeg.swift) for MP4 audio and raw AAC, libmpg123
// (MPG123.swift) for MPEG audio, libsndfile (SndFile.swift) for everything else.

/// Why an audio file could not be played, naming the file.
public struct DecoderError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Reason: Sendable, Equatable {
        /// No file at that path.
        case missing
        /// The file exists but has no bytes.
        case empty
        /// The file is a valid audio file that holds no frames (a header alone).
        case noAudio
        /// The file could not be opened for reading (permissions, a directory, ...).
        case unreadable(String)
        /// The file's contents are not a format read here (libsndfile's or FFmpeg's MP4/AAC).
        case unsupportedFormat(String)
        /// The file claims a known format but its data is broken.
        case corrupt(String)
        /// Decoding stopped before the length the file declares.
        case truncated(expectedFrames: Int, decodedFrames: Int)
        /// The entry has no file: what gave it knew it could not play (`AudioEntry.Source.unplayable`).
        case unplayable(String)
        /// Reading a file still downloading was given up because its reader moved on (a skip, a
        /// seek or a stop came while it waited for bytes): not the file's fault, never reported.
        case abandoned
    }

    public let path: String
    public let reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .missing: "\(path): no such file"
        case .empty: "\(path): the file is empty"
        case .noAudio: "\(path): holds no audio (0 frames)"
        case .unreadable(let why): "\(path): cannot be read (\(why))"
        case .unsupportedFormat(let why): "\(path): unsupported audio format (\(why))"
        case .corrupt(let why): "\(path): corrupt audio data (\(why))"
        case .truncated(let expected, let decoded):
            "\(path): truncated, decoding stopped at frame \(decoded) of \(expected)"
        case .unplayable(let why): why
        case .abandoned: "\(path): reading stopped while waiting for the download (the player moved on)"
        }
    }
}

/// Tags and properties of an audio file, as its decoder (libsndfile, FFmpeg) reports them.
public struct AudioFileInfo: Sendable, Equatable {
    public var sampleRate: Int
    public var channelCount: Int
    /// Frames the file declares (for a stream format such as MP3, an estimate).
    public var frameCount: Int
    /// The container, e.g. "OGG (OGG Container format)", or for MP4 the codec: "MPEG-4 (ALAC)".
    public var formatName: String
    public var title: String?
    public var artist: String?
    public var album: String?
    public var genre: String?
    public var trackNumber: Int?
    public var date: String?
    public var comment: String?
    /// The album's artist (`ALBUMARTIST`, ID3 `TPE2`, MP4 `aART`), as the file names it (a
    /// compilation's "Various Artists"). libsndfile does not read it: see `AudioFileDecoder.readAllTags()`.
    public var albumArtist: String? = nil
    /// The disc of a multi-disc album (`DISCNUMBER`, ID3 `TPOS`, MP4 `disk`); libsndfile does not
    /// read it either.
    public var discNumber: Int? = nil

    public var duration: Double { sampleRate > 0 ? Double(frameCount) / Double(sampleRate) : 0 }
}

/// How `AudioFileDecoder` reads one kind of file: a decoder library's reader.
protocol AudioFileReader: AnyObject {
    var info: AudioFileInfo { get }
    /// Frames the file's header promises (more than `info.frameCount` when it was cut short).
    var declaredFrameCount: Int { get }
    /// Decodes up to `frameCount` frames into `buffer`; 0 at the end.
    func read(into buffer: UnsafeMutablePointer<Float>, frameCount: Int) throws(DecoderError) -> Int
    /// Moves to `frame` (clamped to the file); returns the new position.
    func seek(toFrame frame: Int) throws(DecoderError) -> Int
}

/// A file opened for decoding to interleaved 32-bit float frames, by the decoder its first
/// bytes call for: FFmpeg for MP4 (`ftyp`: `.m4a` AAC and ALAC from iTunes and Apple Music) and
/// ADTS AAC, libmpg123 for MP3 (and MP2), libsndfile for WAV, FLAC, Ogg Vorbis, Opus, AIFF and the rest.
///
/// Thread safety: one thread at a time. Real-time safety: none (file I/O); used on the
/// decoder thread only.
public final class AudioFileDecoder {
    public let path: String
    public let info: AudioFileInfo
    /// Frames the file's header promises; more than `info.frameCount` when the file was cut short.
    public let declaredFrameCount: Int
    /// Frames decoded so far (the read position).
    public private(set) var position = 0
    private let reader: any AudioFileReader
    /// The file as it was opened; nil for a file still downloading (never kept for reuse).
    private let identity: FileIdentity?

    /// Which file a path named, and its state: the same path names another file, or the file
    /// changed, when any of these differs.
    private struct FileIdentity: Equatable {
        let device: UInt
        let inode: UInt
        let size: Int
        let modifiedSeconds: Int
        let modifiedNanoseconds: Int

        init(_ status: stat) {
            device = UInt(status.st_dev)
            inode = UInt(status.st_ino)
            size = Int(status.st_size)
            modifiedSeconds = status.st_mtim.tv_sec
            modifiedNanoseconds = status.st_mtim.tv_nsec
        }

        init?(path: String) {
            var status = stat()
            guard stat(path, &status) == 0 else { return nil }
            self.init(status)
        }
    }

    /// A decoder handed from the thread that opened it to the one that takes it (never shared).
    private struct Kept: @unchecked Sendable {
        let decoder: AudioFileDecoder
    }
    private static let kept = Mutex<Kept?>(nil)

    /// File extensions (lowercase) of the formats the engine reads: what a library scan
    /// looks at, what a command line takes for a file, and a file with one of them that the
    /// decoder does not recognise is called corrupt rather than unsupported.
    public static let fileExtensions: Set<String> = ["wav", "wave", "flac", "ogg", "oga", "opus", "mp3",
                                                     "aif", "aiff", "aifc", "au", "caf", "w64",
                                                     "m4a", "m4b", "mp4", "aac"]
    /// Those of them that hold lossless audio (an `.m4a` may hold ALAC or AAC: see
    /// `AudioFileInfo.formatName`).
    public static let losslessFileExtensions: Set<String> = ["wav", "wave", "flac", "aif", "aiff", "aifc", "au", "caf", "w64"]

    /// A tag's text without the white space (and line breaks) around it; nil when nothing is
    /// left. Written out rather than Foundation's `trimmingCharacters(in:)`, which goes through
    /// NSString and cost `musickit play FILE` ~0.12 ms of its start for the first file's tags.
    static func tagText(_ value: UnsafePointer<CChar>) -> String? {
        let scalars = String(cString: value).unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return nil }
        return String(scalars[first...last])
    }

    /// Opens what `entry` plays (taking the decoder kept for its file, if one is); an unplayable
    /// entry fails with the reason it was given.
    public static func open(_ entry: AudioEntry) throws(DecoderError) -> AudioFileDecoder {
        switch entry.source {
        case .file(let path): try open(path: path)
        case .unplayable(let reason): throw DecoderError(path: "", reason: .unplayable(reason))
        }
    }

    /// Opens `path`: the decoder kept for it (`keepForReuse`) when the path still names the
    /// file it opened, unchanged, else a new one.
    public static func open(path: String) throws(DecoderError) -> AudioFileDecoder {
        let taken = kept.withLock { slot -> AudioFileDecoder? in
            guard let decoder = slot?.decoder, decoder.path == path else { return nil }
            slot = nil
            return decoder
        }
        if let taken, taken.position == 0, let identity = taken.identity, FileIdentity(path: path) == identity {
            return taken
        }
        return try AudioFileDecoder(path: path)
    }

    /// Keeps this decoder, still at its first frame, for the next `open` of its file: a program
    /// that reads a file's tags before playing it (`Song(fileURL:)`, then the player) opens it
    /// once (~0.15 ms of `musickit play FILE`'s start). One is kept at a time, the one before
    /// it closed; a file still downloading is never kept. Do not use the decoder afterwards.
    public func keepForReuse() {
        guard position == 0, identity != nil else { return }
        let replaced = AudioFileDecoder.kept.withLock { slot in
            defer { slot = Kept(decoder: self) }
            return slot
        }
        _ = replaced  // closed here, outside the lock
    }

    public init(path: String) throws(DecoderError) {
        self.path = path
        var status = stat()
        reader = try AudioFileDecoder.reader(for: path, status: &status)
        identity = status.st_ino == 0 ? nil : FileIdentity(status)  // not stat'ed: still downloading
        info = reader.info
        declaredFrameCount = reader.declaredFrameCount
    }

    /// The reader `path` calls for: FFmpeg for a file still downloading (a catalog preview, read
    /// as it arrives) and for MP4/ADTS content, libsndfile for the rest — once the file is known
    /// to be a readable regular file with bytes (`status`: its `stat`; left as it was for a file
    /// still downloading).
    private static func reader(for path: String, status: inout stat) throws(DecoderError) -> any AudioFileReader {
        if GrowingFile.growing(path) != nil { return try FFmpegReader(path: path) }
        if stat(path, &status) != 0 {
            let code = errno
            throw DecoderError(path: path, reason: code == ENOENT ? .missing
                               : .unreadable(String(cString: strerror(code))))
        }
        if (status.st_mode & S_IFMT) == S_IFDIR {
            throw DecoderError(path: path, reason: .unreadable("it is a directory"))
        }
        if (status.st_mode & S_IFMT) != S_IFREG {
            // A pipe, a device (/dev/zero) or a socket: no length, and reading may never end.
            throw DecoderError(path: path, reason: .unreadable("it is not a regular file but a "
                + ((status.st_mode & S_IFMT) == S_IFIFO ? "pipe" : (status.st_mode & S_IFMT) == S_IFSOCK ? "socket" : "device")))
        }
        if status.st_size == 0 { throw DecoderError(path: path, reason: .empty) }
        if access(path, R_OK) != 0 {
            throw DecoderError(path: path, reason: .unreadable(String(cString: strerror(errno))))
        }
        let head = AudioFileDecoder.head(of: path)
        if FFmpegReader.recognizes(head) { return try FFmpegReader(path: path) }
        return MPG123Reader.recognizes(path, head: head) ? try MPG123Reader(path: path) : try SndFileReader(path: path)
    }

    /// Loads the library that reads `path` — FFmpeg for MP4/ADTS content and files still
    /// downloading, libmpg123 for MPEG audio, libsndfile for the rest — without opening the file
    /// for decoding, so that opening it later does no dynamic loading (see
    /// `AudioEngine.warmUpDevice`). A library that fails to load is not reported here: opening
    /// the file says what is wrong.
    public static func loadLibrary(forFileAt path: String) {
        let head = head(of: path)
        if GrowingFile.growing(path) != nil || FFmpegReader.recognizes(head) {
            FFmpegReader.loadLibrary()
        } else if MPG123Reader.recognizes(path, head: head) {
            MPG123Reader.loadLibrary()
        } else {
            SndFileReader.loadLibrary()
        }
    }

    /// The first bytes of a file (up to 12), for choosing its reader.
    private static func head(of path: String) -> [UInt8] {
        guard let handle = fopen(path, "rb") else { return [] }
        defer { fclose(handle) }
        var head = [UInt8](repeating: 0, count: 12)
        head.removeLast(12 - fread(&head, 1, head.count, handle))
        return head
    }

    /// Decodes up to `frameCount` frames into `buffer` (interleaved, `info.channelCount` wide).
    /// Returns the frames decoded; 0 at the end. Throws `.truncated` or `.corrupt` when the
    /// data stops or breaks before the declared length.
    public func read(into buffer: UnsafeMutablePointer<Float>, frameCount: Int) throws(DecoderError) -> Int {
        let decoded = try reader.read(into: buffer, frameCount: frameCount)
        position += decoded
        return decoded
    }

    /// Moves the read position to `frame` (clamped to the file), exactly.
    public func seek(toFrame frame: Int) throws(DecoderError) {
        position = try reader.seek(toFrame: frame)
    }

    /// The cover art stored in the file (JPEG or PNG bytes), when its format carries one
    /// (MP4's `covr`).
    public var coverArt: Data? { (reader as? FFmpegReader)?.coverArt }

    /// `info` with every tag the file carries, and its embedded cover: for a file libsndfile
    /// decodes (FLAC, Ogg, MP3, WAV…), what libsndfile cannot read — the album artist, the disc
    /// number, a FLAC `PICTURE` or ID3 `APIC` cover, and any tag it left empty — read through
    /// FFmpeg's demuxers, which know every tag format. That opens the file once more (~0.1 ms,
    /// and FFmpeg's load the first time in a process): for a library scan, not for the path to
    /// a first sound. A file FFmpeg decodes has them already.
    public func readAllTags() -> (info: AudioFileInfo, coverArt: Data?) {
        if let ffmpeg = reader as? FFmpegReader { return (info, ffmpeg.coverArt) }
        return info.completedByFFmpeg(path: path) ?? (info, nil)
    }

    /// Properties and tags without keeping the file open.
    public static func info(path: String) throws(DecoderError) -> AudioFileInfo {
        try AudioFileDecoder(path: path).info
    }

    /// The decoder libraries' versions, e.g. "libsndfile-1.2.0, libavformat 59.27.100" (or why
    /// one is missing).
    public static var libraryVersion: String {
        "\(SndFileReader.libraryVersion), \(FFmpegReader.libraryVersion), \(MPG123Reader.libraryVersion)"
    }
}
