import PlatformSupport
import CFFmpeg
import Foundation
import Glibc

// The one wrapper around FFmpeg (CFFmpeg: libavformat, libavcodec, libavutil): MP4 audio, and
// JPEG covers for the artwork cache. Every av*_ call of the project goes through this file, through `LibAV`'s table: the libraries (and the dozens they
// load) are opened when the first MP4 file is, not at every program's start (see DynamicLibrary).
//
// FFmpeg reads what libsndfile does not: MP4 audio (`.m4a`, `.m4b`, `.mp4`: AAC and ALAC, as
// iTunes, Apple Music and most rippers write it) and raw AAC (ADTS). Gapless: the encoder's
// priming is dropped (the MP4 edit list, which FFmpeg applies, or else iTunes' `iTunSMPB` tag)
// and the padding after the last real frame is cut (`iTunSMPB`'s sample count, else the
// edit list's duration), so an album's tracks join sample-accurately. An edit list's duration
// is only as exact as the movie's timescale: FFmpeg's muxer writes milliseconds unless told
// `-movie_timescale <rate>`, which can leave up to 43 frames of a 44.1 kHz track out.

/// An MP4 or ADTS file decoded by FFmpeg to interleaved 32-bit float frames.
///
/// Thread safety: one thread at a time. Real-time safety: none (file I/O, allocation); used on
/// the decoder thread only.
final class FFmpegReader: AudioFileReader {
    let path: String
    let info: AudioFileInfo
    /// Frames the container declares; decoding that stops well before it is a truncated file.
    var declaredFrameCount: Int { info.frameCount }
    /// The cover art stored in the file (JPEG or PNG bytes), if any.
    let coverArt: Data?

    private let av: LibAV
    private let handles: Handles
    private var packet: UnsafeMutablePointer<AVPacket> { handles.packet! }
    private var frame: UnsafeMutablePointer<AVFrame> { handles.frame! }
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let sampleRate: Int
    private let channelCount: Int
    /// Encoder priming dropped here (from `iTunSMPB`) rather than by FFmpeg (edit list).
    private let manualPriming: Int
    /// A packet read while opening (to learn whether FFmpeg applies an edit list), sent first.
    private var heldPacket = false

    /// Decoded interleaved samples not yet handed out, from `pendingStart`.
    private var pending: [Float] = []
    private var pendingStart = 0
    /// Frames to drop from the start of what is decoded next (priming without an edit list).
    private var framesToDrop = 0
    /// After a seek: the first frame wanted; decoded frames before it are dropped (by their pts).
    private var seekTarget: Int?
    /// Frames handed out so far (the read position).
    private var delivered = 0
    private var inputEnded = false
    private var decoderDrained = false

    /// Decoding stopping this many frames before the declared length is not called truncation
    /// (one AAC frame plus the decoder's delay).
    private static let lengthSlack = 2_048
    /// Decoded before a seek's target so that the AAC decoder's overlap is complete there.
    private static let seekPreroll = 4_096

    /// Whether the file's first bytes are an ISO media file (`ftyp` box: MP4, M4A, M4B, 3GP,
    /// MOV) or an ADTS (raw AAC) frame: what this reader is for.
    static func recognizes(_ head: [UInt8]) -> Bool {
        if head.count >= 8, head[4...7] == [0x66, 0x74, 0x79, 0x70] { return true }  // "ftyp"
        // ADTS: a 12-bit sync and layer 00 (MPEG audio has layer 01-11 there).
        return head.count >= 2 && head[0] == 0xFF && head[1] & 0xF6 == 0xF0
    }

    init(path: String) throws(DecoderError) {
        self.path = path
        switch LibAV.loaded {
        case .success(let library): av = library
        case .failure(let failure): throw DecoderError(path: path, reason: .unsupportedFormat(failure.description))
        }
        // Freed by its deinit, also when opening fails half-way.
        let handles = Handles(av)
        self.handles = handles
        if let growing = GrowingFile.growing(path) {
            // Still downloading: read through a source that waits for the bytes to arrive.
            try handles.readGrowing(growing, path: path)
        }
        var result = av.openInput(&handles.format, path, nil, nil)
        guard result >= 0, let format = handles.format else {
            if let error = handles.downloadError(path: path, atFrame: nil) { throw error }
            throw DecoderError(path: path, reason: .corrupt("not a readable MP4 or AAC file: \(av.message(result))"))
        }
        result = av.findStreamInfo(format, nil)
        guard result >= 0 else {
            throw handles.downloadError(path: path, atFrame: nil) ?? DecoderError(path: path, reason: .corrupt(av.message(result)))
        }
        var decoderCodec: UnsafePointer<AVCodec>?
        result = av.findBestStream(format, AVMEDIA_TYPE_AUDIO, -1, -1, &decoderCodec, 0)
        guard result >= 0, let decoderCodec else {
            throw DecoderError(path: path, reason: result == LibAV.streamNotFound ? .noAudio
                               : .unsupportedFormat("no decoder for its audio: \(av.message(result))"))
        }
        streamIndex = result
        let stream = format.pointee.streams[Int(result)]!
        handles.codec = av.allocCodecContext(decoderCodec)
        handles.packet = av.packetAlloc()
        handles.frame = av.frameAlloc()
        guard let context = handles.codec, handles.packet != nil, handles.frame != nil else {
            throw DecoderError(path: path, reason: .unreadable("out of memory"))
        }
        result = av.parametersToContext(context, stream.pointee.codecpar)
        if result >= 0 { result = av.openCodec(context, decoderCodec, nil) }
        guard result >= 0 else {
            throw DecoderError(path: path, reason: .unsupportedFormat("\(String(cString: decoderCodec.pointee.name)): \(av.message(result))"))
        }
        sampleRate = Int(context.pointee.sample_rate)
        channelCount = Int(context.pointee.ch_layout.nb_channels)
        guard sampleRate > 0, channelCount > 0 else {
            throw DecoderError(path: path, reason: .corrupt("declares \(channelCount) channels at \(sampleRate) Hz"))
        }
        timeBase = stream.pointee.time_base

        // The first packet says whether FFmpeg trims the priming (an edit list: "skip samples").
        var appliesEditList = false
        while av.readFrame(format, handles.packet) >= 0 {
            if handles.packet!.pointee.stream_index == streamIndex {
                var size = 0
                appliesEditList = av.packetSideData(handles.packet, AV_PKT_DATA_SKIP_SAMPLES, &size) != nil
                heldPacket = true
                break
            }
            av.packetUnref(handles.packet)
        }
        guard heldPacket else { throw DecoderError(path: path, reason: .noAudio) }

        let tags = LibAV.Tags(av, format.pointee.metadata, stream.pointee.metadata)
        // iTunes' gapless tag: " 00000000 PRIMING PADDING SAMPLECOUNT …" in hexadecimal.
        let gapless = tags["iTunSMPB"].map { $0.split(separator: " ").compactMap { Int($0, radix: 16) } } ?? []
        let frameCount: Int
        if gapless.count >= 4, gapless[3] > 0 {
            // The tag's length is exact; an edit list's is in the movie's timescale (often
            // milliseconds). Its priming is dropped here unless FFmpeg drops it already.
            manualPriming = appliesEditList ? 0 : gapless[1]
            frameCount = gapless[3]
        } else {
            manualPriming = 0
            let duration = stream.pointee.duration
            if duration != LibAV.noTimestamp, duration > 0 {
                frameCount = LibAV.frames(duration, timeBase, sampleRate)
            } else if format.pointee.duration != LibAV.noTimestamp, format.pointee.duration > 0 {
                frameCount = Int(format.pointee.duration) * sampleRate / Int(AV_TIME_BASE)
            } else {
                frameCount = Int.max
            }
        }
        guard frameCount > 0 else { throw DecoderError(path: path, reason: .noAudio) }
        framesToDrop = manualPriming

        let container = format.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "mp4"
        let codecName = String(cString: decoderCodec.pointee.name).uppercased()
        info = AudioFileInfo(sampleRate: sampleRate, channelCount: channelCount, frameCount: frameCount,
                             formatName: container.hasPrefix("mov") ? "MPEG-4 (\(codecName))" : "\(container.uppercased()) (\(codecName))",
                             title: tags["title"], artist: tags["artist"], album: tags["album"], genre: tags["genre"],
                             trackNumber: tags.leadingNumber("track"), date: tags["date"], comment: tags["comment"],
                             albumArtist: tags.albumArtist, discNumber: tags.leadingNumber("disc"))
        coverArt = LibAV.coverArt(format)
    }

    func read(into buffer: UnsafeMutablePointer<Float>, frameCount: Int) throws(DecoderError) -> Int {
        var written = 0
        while written < frameCount && delivered < info.frameCount {
            let available = (pending.count - pendingStart) / channelCount
            if available == 0 {
                guard try decodeMore() else { break }
                continue
            }
            let count = min(available, frameCount - written, info.frameCount - delivered)
            pending.withUnsafeBufferPointer { samples in
                (buffer + written * channelCount).update(from: samples.baseAddress! + pendingStart, count: count * channelCount)
            }
            pendingStart += count * channelCount
            written += count
            delivered += count
        }
        if written == 0, delivered + FFmpegReader.lengthSlack < info.frameCount, info.frameCount != Int.max {
            throw DecoderError(path: path, reason: .truncated(expectedFrames: info.frameCount, decodedFrames: delivered))
        }
        return written
    }

    /// Moves to `frame` exactly: FFmpeg seeks to a packet before it (less the pre-roll), and
    /// what is decoded before `frame` is dropped. Returns the new position.
    func seek(toFrame target: Int) throws(DecoderError) -> Int {
        let frame = max(0, min(target, info.frameCount == Int.max ? target : info.frameCount))
        let from = max(0, frame + manualPriming - FFmpegReader.seekPreroll)
        let timestamp = Int64(from) * Int64(timeBase.den) / (Int64(timeBase.num) * Int64(sampleRate))
        if heldPacket {
            av.packetUnref(packet)
            heldPacket = false
        }
        let result = av.seekFrame(handles.format, streamIndex, timestamp, LibAV.seekBackward)
        guard result >= 0 else { throw DecoderError(path: path, reason: .corrupt("cannot seek to frame \(frame): \(av.message(result))")) }
        av.flushBuffers(handles.codec)
        pending.removeAll(keepingCapacity: true)
        pendingStart = 0
        framesToDrop = 0
        seekTarget = frame
        inputEnded = false
        decoderDrained = false
        delivered = frame
        return frame
    }

    /// Decodes the next frame into `pending`; false at the end of the stream.
    private func decodeMore() throws(DecoderError) -> Bool {
        while !decoderDrained {
            let received = av.receiveFrame(handles.codec, frame)
            if received == 0 {
                defer { av.frameUnref(frame) }
                if append(frame) { return true }
                continue
            }
            if received == LibAV.endOfFile {
                decoderDrained = true
                break
            }
            guard received == LibAV.tryAgain else {
                throw DecoderError(path: path, reason: .corrupt("frame \(delivered): \(av.message(received))"))
            }
            try sendNextPacket()
        }
        return false
    }

    /// Sends the decoder the next packet of the stream, or the end of the input.
    private func sendNextPacket() throws(DecoderError) {
        if inputEnded { return }
        if !heldPacket {
            while true {
                let result = av.readFrame(handles.format, packet)
                if result == LibAV.endOfFile {
                    inputEnded = true
                    _ = av.sendPacket(handles.codec, nil)
                    return
                }
                guard result >= 0 else {
                    if let error = handles.downloadError(path: path, atFrame: delivered) { throw error }
                    throw DecoderError(path: path, reason: .corrupt("frame \(delivered): \(av.message(result))"))
                }
                if packet.pointee.stream_index == streamIndex { break }
                av.packetUnref(packet)
            }
        }
        heldPacket = false
        let sent = av.sendPacket(handles.codec, packet)
        av.packetUnref(packet)
        if sent < 0 && sent != LibAV.tryAgain && sent != LibAV.invalidData {
            throw DecoderError(path: path, reason: .corrupt("frame \(delivered): \(av.message(sent))"))
        }
        // Invalid data in one packet: the decoder skips it, as players do (the length check
        // at the end still reports a file that breaks off).
    }

    /// Appends a decoded frame's samples as interleaved floats, less what is to be dropped
    /// (priming, or what precedes a seek's target); false when nothing of it was kept.
    private func append(_ frame: UnsafeMutablePointer<AVFrame>) -> Bool {
        let count = Int(frame.pointee.nb_samples)
        var skip = 0
        if framesToDrop > 0 {
            skip = min(framesToDrop, count)
            framesToDrop -= skip
        }
        if let target = seekTarget {
            let timestamp = frame.pointee.best_effort_timestamp != LibAV.noTimestamp ? frame.pointee.best_effort_timestamp : frame.pointee.pts
            guard timestamp != LibAV.noTimestamp else {
                seekTarget = nil  // no position to go by: keep what comes
                return appendSamples(frame, from: 0, count: count)
            }
            let start = LibAV.frames(timestamp, timeBase, sampleRate) - manualPriming
            if start + count <= target { return false }
            skip = max(0, target - start)
            seekTarget = nil
        }
        guard skip < count else { return false }
        return appendSamples(frame, from: skip, count: count)
    }

    private func appendSamples(_ frame: UnsafeMutablePointer<AVFrame>, from first: Int, count: Int) -> Bool {
        guard count > first, let planes = frame.pointee.extended_data else { return false }
        if pendingStart == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
        }
        let base = pending.count
        pending.append(contentsOf: repeatElement(0, count: (count - first) * channelCount))
        let channels = min(channelCount, Int(frame.pointee.ch_layout.nb_channels))
        let outputChannels = channelCount
        pending.withUnsafeMutableBufferPointer { output in
            let out = output.baseAddress! + base
            /// Copies every channel's samples `first..<count`, read as `T` and made a float by `float`.
            func convert<T>(_: T.Type, planar: Bool, _ float: (T) -> Float) {
                for channel in 0..<channels {
                    let plane = UnsafeRawPointer(planes[planar ? channel : 0]!).assumingMemoryBound(to: T.self)
                    for index in first..<count {
                        out[(index - first) * outputChannels + channel] = float(plane[planar ? index : index * channels + channel])
                    }
                }
            }
            // Integers scaled as libsndfile does: 1/32768 for 16 bits, 1/2³¹ for 32 (exact for
            // up to 24 significant bits, as ALAC's 24-bit audio).
            switch AVSampleFormat(rawValue: frame.pointee.format) {
            case AV_SAMPLE_FMT_FLTP: convert(Float.self, planar: true) { $0 }
            case AV_SAMPLE_FMT_FLT: convert(Float.self, planar: false) { $0 }
            case AV_SAMPLE_FMT_S16P: convert(Int16.self, planar: true) { Float($0) / 32_768 }
            case AV_SAMPLE_FMT_S16: convert(Int16.self, planar: false) { Float($0) / 32_768 }
            case AV_SAMPLE_FMT_S32P: convert(Int32.self, planar: true) { Float($0) / 2_147_483_648 }
            case AV_SAMPLE_FMT_S32: convert(Int32.self, planar: false) { Float($0) / 2_147_483_648 }
            case AV_SAMPLE_FMT_DBLP: convert(Double.self, planar: true) { Float($0) }
            case AV_SAMPLE_FMT_DBL: convert(Double.self, planar: false) { Float($0) }
            case AV_SAMPLE_FMT_U8P: convert(UInt8.self, planar: true) { (Float($0) - 128) / 128 }
            case AV_SAMPLE_FMT_U8: convert(UInt8.self, planar: false) { (Float($0) - 128) / 128 }
            default: break  // no decoder of MP4 audio gives another format; silence rather than noise
            }
        }
        return true
    }

    /// Loads FFmpeg's libraries now (see `AudioFileDecoder.loadLibrary(forFileAt:)`).
    static func loadLibrary() { _ = LibAV.loaded }

    /// The libavformat version ("libavformat 59.27.100"), or why FFmpeg is missing.
    static var libraryVersion: String {
        switch LibAV.loaded {
        case .success(let library):
            let version = library.formatVersion()
            return "libavformat \(version >> 16).\((version >> 8) & 0xFF).\(version & 0xFF)"
        case .failure(let failure): return failure.description
        }
    }
}

/// Still images decoded by FFmpeg, for artwork: JPEG covers (embedded in MP4 files, or a
/// folder's `cover.jpg`) as RGBA pixels.
package enum FFmpegImage {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// The JPEG image in `data`: its size and its pixels, row by row, four bytes (RGBA) each.
    package static func decodeJPEG(_ data: Data) throws(Failure) -> (width: Int, height: Int, pixels: [UInt8]) {
        let av: LibAV
        switch LibAV.loaded {
        case .success(let library): av = library
        case .failure(let failure): throw Failure(description: failure.description)
        }
        let handles = Handles(av)
        guard let codec = av.findDecoder(AV_CODEC_ID_MJPEG) else { throw Failure(description: "FFmpeg has no JPEG decoder") }
        handles.codec = av.allocCodecContext(codec)
        handles.packet = av.packetAlloc()
        handles.frame = av.frameAlloc()
        guard let context = handles.codec, let packet = handles.packet, let frame = handles.frame,
              av.openCodec(context, codec, nil) >= 0, data.count < Int(Int32.max), av.newPacket(packet, Int32(data.count)) >= 0 else {
            throw Failure(description: "cannot set up FFmpeg's JPEG decoder")
        }
        data.withUnsafeBytes { bytes in packet.pointee.data.update(from: bytes.bindMemory(to: UInt8.self).baseAddress!, count: data.count) }
        var result = av.sendPacket(context, packet)
        if result >= 0 { _ = av.sendPacket(context, nil) }
        if result >= 0 { result = av.receiveFrame(context, frame) }
        guard result >= 0 else { throw Failure(description: "not a JPEG image that can be read: \(av.message(result))") }
        let width = Int(frame.pointee.width)
        let height = Int(frame.pointee.height)
        guard width > 0, height > 0, width * height <= 64 << 20 else { throw Failure(description: "a JPEG image of \(width)×\(height) pixels") }
        // Chroma planes' subsampling across and down; JPEG's full-range YCbCr.
        let subsampling: (across: Int, down: Int)?
        switch AVPixelFormat(rawValue: frame.pointee.format) {
        case AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUV420P: subsampling = (2, 2)
        case AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUV422P: subsampling = (2, 1)
        case AV_PIX_FMT_YUVJ444P, AV_PIX_FMT_YUV444P: subsampling = (1, 1)
        case AV_PIX_FMT_YUVJ440P, AV_PIX_FMT_YUV440P: subsampling = (1, 2)
        case AV_PIX_FMT_YUVJ411P, AV_PIX_FMT_YUV411P: subsampling = (4, 1)
        case AV_PIX_FMT_GRAY8: subsampling = nil
        default: throw Failure(description: "a JPEG image in a colour layout not read here (FFmpeg pixel format \(frame.pointee.format))")
        }
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        let luma = frame.pointee.data.0!
        let lumaStride = Int(frame.pointee.linesize.0)
        func clamped(_ value: Float) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
        pixels.withUnsafeMutableBufferPointer { output in
            for row in 0..<height {
                for column in 0..<width {
                    let y = Float(luma[row * lumaStride + column])
                    let pixel = (row * width + column) * 4
                    guard let subsampling, let blue = frame.pointee.data.1, let red = frame.pointee.data.2 else {
                        output[pixel] = UInt8(y); output[pixel + 1] = UInt8(y); output[pixel + 2] = UInt8(y)
                        continue
                    }
                    let chroma = (row / subsampling.down) * Int(frame.pointee.linesize.1) + column / subsampling.across
                    let cb = Float(blue[chroma]) - 128
                    let cr = Float(red[(row / subsampling.down) * Int(frame.pointee.linesize.2) + column / subsampling.across]) - 128
                    output[pixel] = clamped(y + 1.402 * cr)
                    output[pixel + 1] = clamped(y - 0.344136 * cb - 0.714136 * cr)
                    output[pixel + 2] = clamped(y + 1.772 * cb)
                }
            }
        }
        return (width, height, pixels)
    }
}

/// What one open file holds in FFmpeg, freed together.
private final class Handles {
    let av: LibAV
    var format: UnsafeMutablePointer<AVFormatContext>?
    var codec: UnsafeMutablePointer<AVCodecContext>?
    var packet: UnsafeMutablePointer<AVPacket>?
    var frame: UnsafeMutablePointer<AVFrame>?
    /// For a file still downloading: FFmpeg reads through `input` from `source`.
    var input: UnsafeMutablePointer<AVIOContext>?
    var source: GrowingSource?

    init(_ av: LibAV) { self.av = av }

    /// Why a read of a file still downloading failed, when the download is the reason: the
    /// reader gave up waiting (`.abandoned`) or the download failed (at `frame`, when decoding).
    func downloadError(path: String, atFrame frame: Int?) -> DecoderError? {
        guard let source else { return nil }
        if source.abandoned { return DecoderError(path: path, reason: .abandoned) }
        guard let failure = source.failure else { return nil }
        return DecoderError(path: path, reason: .unreadable(frame.map { "its download failed at frame \($0): \(failure)" }
                                                            ?? "its download failed: \(failure)"))
    }

    /// Makes `format` read `growing` through `source` (custom I/O) instead of opening the path.
    func readGrowing(_ growing: GrowingFile, path: String) throws(DecoderError) {
        // The partial file, or the complete one if the download finished meanwhile.
        var descriptor = open(growing.partialPath, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 { descriptor = open(path, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { throw DecoderError(path: path, reason: .unreadable(String(cString: strerror(errno)))) }
        let source = GrowingSource(descriptor: descriptor, growing: growing)
        self.source = source
        let size = 65_536
        guard let context = av.allocFormatContext(), let buffer = av.malloc(size) else {
            throw DecoderError(path: path, reason: .unreadable("out of memory"))
        }
        format = context
        input = av.allocIOContext(buffer.assumingMemoryBound(to: UInt8.self), Int32(size), 0,
                                  Unmanaged.passUnretained(source).toOpaque(), GrowingSource.read, nil, GrowingSource.seek)
        guard let input else {
            av.free(buffer)
            throw DecoderError(path: path, reason: .unreadable("out of memory"))
        }
        context.pointee.pb = input
        context.pointee.flags |= LibAV.customIO
    }

    deinit {
        if packet != nil { av.packetFree(&packet) }
        if frame != nil { av.frameFree(&frame) }
        if codec != nil { av.freeCodecContext(&codec) }
        if format != nil { av.closeInput(&format) }
        if let input {
            av.free(UnsafeMutableRawPointer(input.pointee.buffer))  // FFmpeg may have replaced the buffer it was given
            av.freeIOContext(&self.input)
        }
    }
}

/// A file still downloading, as FFmpeg's custom input: reads past what has arrived wait for
/// more (`GrowingFile`); the end is the end once the download is complete.
private final class GrowingSource {
    let descriptor: Int32
    let growing: GrowingFile
    var position = 0
    /// Why the download failed, once a read ran into it.
    var failure: String?
    /// A read gave up waiting for bytes: the reader moved on (`AbandonableWaits`).
    var abandoned = false

    init(descriptor: Int32, growing: GrowingFile) {
        self.descriptor = descriptor
        self.growing = growing
        growing.readerOpened()
    }

    deinit {
        growing.readerClosed()
        close(descriptor)
    }

    static let read: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32 = { opaque, buffer, size in
        let source = Unmanaged<GrowingSource>.fromOpaque(opaque!).takeUnretainedValue()
        while true {
            let count = pread(source.descriptor, buffer, Int(size), off_t(source.position))
            if count > 0 {
                source.position += count
                return Int32(count)
            }
            if count < 0 && errno != EINTR { return -EIO }
            if count < 0 { continue }
            let progress = source.growing.waitForBytes(beyond: source.position)
            if progress.written > source.position { continue }
            if progress.abandoned {
                source.abandoned = true
                return -EIO
            }
            if let failure = progress.failure {
                source.failure = failure
                return -EIO
            }
            // Complete; but what was written after this read's pread is still to be read.
            if pread(source.descriptor, buffer, 1, off_t(source.position)) == 1 { continue }
            return LibAV.endOfFile
        }
    }

    static let seek: @convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64 = { opaque, offset, whence in
        let source = Unmanaged<GrowingSource>.fromOpaque(opaque!).takeUnretainedValue()
        let progress = source.growing.progress
        let size = progress.total ?? (progress.finished ? progress.written : nil)
        switch whence & ~LibAV.seekForce {
        case LibAV.seekSize: return size.map(Int64.init) ?? -1
        case SEEK_SET: source.position = Int(offset)
        case SEEK_CUR: source.position += Int(offset)
        case SEEK_END:
            guard let size else { return -1 }
            source.position = size + Int(offset)
        default: return -1
        }
        return Int64(source.position)
    }
}

/// The FFmpeg functions this file calls, from libavformat, libavcodec and libavutil opened at
/// first use, and the constants that are macros in FFmpeg's headers.
private struct LibAV: @unchecked Sendable {
    // @unchecked: C function pointers, callable from any thread.
    typealias Format = UnsafeMutablePointer<AVFormatContext>
    typealias Codec = UnsafeMutablePointer<AVCodecContext>
    typealias Packet = UnsafeMutablePointer<AVPacket>
    typealias Frame = UnsafeMutablePointer<AVFrame>

    let openInput: @convention(c) (UnsafeMutablePointer<Format?>?, UnsafePointer<CChar>?, UnsafePointer<AVInputFormat>?,
                                   UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    let findStreamInfo: @convention(c) (Format?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    let findBestStream: @convention(c) (Format?, AVMediaType, Int32, Int32, UnsafeMutablePointer<UnsafePointer<AVCodec>?>?, Int32) -> Int32
    let readFrame: @convention(c) (Format?, Packet?) -> Int32
    let seekFrame: @convention(c) (Format?, Int32, Int64, Int32) -> Int32
    let closeInput: @convention(c) (UnsafeMutablePointer<Format?>?) -> Void
    let formatVersion: @convention(c) () -> UInt32
    let allocFormatContext: @convention(c) () -> Format?
    let allocIOContext: @convention(c) (UnsafeMutablePointer<UInt8>?, Int32, Int32, UnsafeMutableRawPointer?,
                                        (@convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32)?,
                                        (@convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int32) -> Int32)?,
                                        (@convention(c) (UnsafeMutableRawPointer?, Int64, Int32) -> Int64)?) -> UnsafeMutablePointer<AVIOContext>?
    let freeIOContext: @convention(c) (UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?) -> Void

    let findDecoder: @convention(c) (AVCodecID) -> UnsafePointer<AVCodec>?
    let allocCodecContext: @convention(c) (UnsafePointer<AVCodec>?) -> Codec?
    let parametersToContext: @convention(c) (Codec?, UnsafePointer<AVCodecParameters>?) -> Int32
    let openCodec: @convention(c) (Codec?, UnsafePointer<AVCodec>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    let sendPacket: @convention(c) (Codec?, UnsafePointer<AVPacket>?) -> Int32
    let receiveFrame: @convention(c) (Codec?, Frame?) -> Int32
    let flushBuffers: @convention(c) (Codec?) -> Void
    let freeCodecContext: @convention(c) (UnsafeMutablePointer<Codec?>?) -> Void
    let packetAlloc: @convention(c) () -> Packet?
    let packetFree: @convention(c) (UnsafeMutablePointer<Packet?>?) -> Void
    let packetUnref: @convention(c) (Packet?) -> Void
    let newPacket: @convention(c) (Packet?, Int32) -> Int32
    let packetSideData: @convention(c) (UnsafePointer<AVPacket>?, AVPacketSideDataType, UnsafeMutablePointer<Int>?) -> UnsafeMutablePointer<UInt8>?

    let frameAlloc: @convention(c) () -> Frame?
    let frameFree: @convention(c) (UnsafeMutablePointer<Frame?>?) -> Void
    let frameUnref: @convention(c) (Frame?) -> Void
    let dictionaryGet: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<AVDictionaryEntry>?, Int32)
        -> UnsafeMutablePointer<AVDictionaryEntry>?
    let errorText: @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
    let malloc: @convention(c) (Int) -> UnsafeMutableRawPointer?
    let free: @convention(c) (UnsafeMutableRawPointer?) -> Void
    let setLogLevel: @convention(c) (Int32) -> Void

    // Macros in FFmpeg's headers.
    static let endOfFile: Int32 = -0x2046_4F45        // AVERROR_EOF: -MKTAG('E','O','F',' ')
    static let invalidData: Int32 = -0x4144_4E49      // AVERROR_INVALIDDATA: -MKTAG('I','N','D','A')
    static let streamNotFound: Int32 = -0x4D41_45F8   // AVERROR_STREAM_NOT_FOUND: -MKTAG(0xF8,'S','T','R')
    static let tryAgain = -EAGAIN                      // AVERROR(EAGAIN)
    static let noTimestamp = Int64.min                 // AV_NOPTS_VALUE
    static let seekBackward: Int32 = 1                 // AVSEEK_FLAG_BACKWARD
    static let attachedPicture: Int32 = 1 << 10        // AV_DISPOSITION_ATTACHED_PIC
    static let quiet: Int32 = -8                       // AV_LOG_QUIET
    static let customIO: Int32 = 0x0080                // AVFMT_FLAG_CUSTOM_IO
    static let seekSize: Int32 = 0x10000               // AVSEEK_SIZE
    static let seekForce: Int32 = 0x20000              // AVSEEK_FORCE

    static let loaded: Result<LibAV, DynamicLibrary.Failure> =
        DynamicLibrary.table("libavutil.so.57") { util throws(DynamicLibrary.Failure) in
            try DynamicLibrary.table("libavcodec.so.59") { codec throws(DynamicLibrary.Failure) in
                try DynamicLibrary.table("libavformat.so.59") { format throws(DynamicLibrary.Failure) in
                    let library = LibAV(
                        openInput: try format("avformat_open_input"), findStreamInfo: try format("avformat_find_stream_info"),
                        findBestStream: try format("av_find_best_stream"), readFrame: try format("av_read_frame"),
                        seekFrame: try format("av_seek_frame"), closeInput: try format("avformat_close_input"),
                        formatVersion: try format("avformat_version"),
                        allocFormatContext: try format("avformat_alloc_context"),
                        allocIOContext: try format("avio_alloc_context"), freeIOContext: try format("avio_context_free"),
                        findDecoder: try codec("avcodec_find_decoder"), allocCodecContext: try codec("avcodec_alloc_context3"),
                        parametersToContext: try codec("avcodec_parameters_to_context"), openCodec: try codec("avcodec_open2"),
                        sendPacket: try codec("avcodec_send_packet"), receiveFrame: try codec("avcodec_receive_frame"),
                        flushBuffers: try codec("avcodec_flush_buffers"), freeCodecContext: try codec("avcodec_free_context"),
                        packetAlloc: try codec("av_packet_alloc"), packetFree: try codec("av_packet_free"),
                        packetUnref: try codec("av_packet_unref"), newPacket: try codec("av_new_packet"),
                        packetSideData: try codec("av_packet_get_side_data"),
                        frameAlloc: try util("av_frame_alloc"), frameFree: try util("av_frame_free"),
                        frameUnref: try util("av_frame_unref"), dictionaryGet: try util("av_dict_get"),
                        errorText: try util("av_strerror"), malloc: try util("av_malloc"), free: try util("av_free"),
                        setLogLevel: try util("av_log_set_level"))
                    // Every failure is reported as a DecoderError; FFmpeg's own log lines would
                    // land under whatever the program prints.
                    library.setLogLevel(quiet)
                    return library
                }.get()
            }.get()
        }

    func message(_ code: Int32) -> String {
        var text = [CChar](repeating: 0, count: 128)
        guard errorText(code, &text, text.count) == 0 else { return "FFmpeg error \(code)" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `timestamp` in `timeBase` as frames at `sampleRate`.
    static func frames(_ timestamp: Int64, _ timeBase: AVRational, _ sampleRate: Int) -> Int {
        Int(timestamp * Int64(timeBase.num) * Int64(sampleRate) / Int64(timeBase.den))
    }

    /// Tags of the stream over those of the container, by case-insensitive name, trimmed;
    /// empty ones left out.
    struct Tags {
        private var values: [String: String] = [:]

        init(_ av: LibAV, _ dictionaries: OpaquePointer?...) { self.init(av, dictionaries) }

        init(_ av: LibAV, _ dictionaries: [OpaquePointer?]) {
            for dictionary in dictionaries {
                var entry: UnsafeMutablePointer<AVDictionaryEntry>?
                while let next = av.dictionaryGet(dictionary, "", entry, Int32(AV_DICT_IGNORE_SUFFIX)) {
                    entry = next
                    guard let key = next.pointee.key, let value = next.pointee.value else { continue }
                    if let text = AudioFileDecoder.tagText(value) { values[String(cString: key).lowercased()] = text }
                }
            }
        }

        subscript(name: String) -> String? { values[name.lowercased()] }

        /// The number before any "/" ("3/12" is track 3 of 12).
        func leadingNumber(_ name: String) -> Int? {
            self[name].flatMap { Int($0.split(separator: "/").first?.trimmingCharacters(in: .whitespaces) ?? "") }
        }

        /// FFmpeg's `album_artist` (from `ALBUMARTIST`, `TPE2`, `aART`), or the spellings it
        /// leaves as they are (APE's "Album Artist", a Vorbis comment's `ALBUM ARTIST`).
        var albumArtist: String? { self["album_artist"] ?? self["albumartist"] ?? self["album artist"] }
    }

    /// Every tag of the file at `path` (the container's and its streams'), read by FFmpeg's
    /// demuxer for any format it knows (FLAC and Ogg comments, ID3v2 `TXXX` frames, MP4's
    /// freeform atoms); nil when it cannot open the file.
    static func readTags(path: String) -> Tags? {
        withInput(path) { av, format in tags(av, format) }
    }

    /// `readTags(path:)` and the file's attached picture, in one open (the picture copied only here).
    static func readTagsAndCover(path: String) -> (tags: Tags, coverArt: Data?)? {
        withInput(path) { av, format in (tags(av, format), coverArt(format)) }
    }

    /// `body` with the file at `path` opened by FFmpeg's demuxer (headers read); nil when it
    /// cannot be.
    private static func withInput<T>(_ path: String, _ body: (LibAV, Format) -> T) -> T? {
        guard case .success(let av) = LibAV.loaded else { return nil }
        var format: Format?
        guard av.openInput(&format, path, nil, nil) >= 0, let opened = format else { return nil }
        defer { av.closeInput(&format) }
        return body(av, opened)
    }

    /// The container's tags and its streams'.
    private static func tags(_ av: LibAV, _ format: Format) -> Tags {
        let streams = (0..<Int(format.pointee.nb_streams)).compactMap { format.pointee.streams[$0]?.pointee.metadata }
        return Tags(av, [format.pointee.metadata] + streams)
    }

    /// The bytes of the stream FFmpeg marks as the file's attached picture (its cover).
    static func coverArt(_ format: Format) -> Data? {
        for index in 0..<Int(format.pointee.nb_streams) {
            guard let stream = format.pointee.streams[index], stream.pointee.disposition & attachedPicture != 0,
                  let data = stream.pointee.attached_pic.data, stream.pointee.attached_pic.size > 0 else { continue }
            return Data(bytes: data, count: Int(stream.pointee.attached_pic.size))
        }
        return nil
    }

}

extension AudioFileInfo {
    /// These tags completed by what FFmpeg's demuxer reads of the file at `path` (for
    /// `AudioFileDecoder.readAllTags()`), and the file's attached picture; nil when FFmpeg
    /// cannot open it.
    func completedByFFmpeg(path: String) -> (info: AudioFileInfo, coverArt: Data?)? {
        guard let read = LibAV.readTagsAndCover(path: path) else { return nil }
        var complete = self
        complete.title = title ?? read.tags["title"]
        complete.artist = artist ?? read.tags["artist"]
        complete.album = album ?? read.tags["album"]
        complete.genre = genre ?? read.tags["genre"]
        complete.trackNumber = trackNumber ?? read.tags.leadingNumber("track")
        complete.date = date ?? read.tags["date"]
        complete.comment = comment ?? read.tags["comment"]
        complete.albumArtist = albumArtist ?? read.tags.albumArtist
        complete.discNumber = discNumber ?? read.tags.leadingNumber("disc")
        return (complete, read.coverArt)
    }
}

extension AudioFileDecoder {
    /// The ReplayGain tags of the file at `path` (nil when it cannot be read), whatever its
    /// format: read through FFmpeg's demuxers, which know the tag formats the decoders meet,
    /// and from an APEv2 tag at the file's end (mp3gain's), which FFmpeg's MP3 demuxer does not read.
    public static func loudnessTags(atPath path: String) -> LoudnessTags? {
        guard let tags = LibAV.readTags(path: path) else { return nil }
        let ape = APETag.items(atPath: path) ?? [:]
        return LoudnessTags { tags[$0] ?? ape[$0.uppercased()] }
    }
}
