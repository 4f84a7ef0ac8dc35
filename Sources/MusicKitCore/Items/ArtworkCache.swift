import PlatformSupport
import AudioEngine
import Foundation
import Glibc

extension RGBAImage {
    /// A PNG or JPEG file, told apart by its first bytes: PNG read by libpng, JPEG by FFmpeg.
    package init(imageFile path: String) throws(Failure) {
        guard let data = FileManager.default.contents(atPath: path) else { throw Failure(description: "\(path): cannot be read") }
        guard ImageFile.isJPEG(data) else {
            try self.init(pngFile: path)
            return
        }
        do throws(FFmpegImage.Failure) {
            let image = try FFmpegImage.decodeJPEG(data)
            self.init(width: image.width, height: image.height, pixels: image.pixels)
        } catch {
            throw Failure(description: "\(path): \(error.description)")
        }
    }
}

/// What the first bytes of an image file say: its kind and its size in pixels.
enum ImageFile {
    static func isJPEG(_ data: Data) -> Bool { data.starts(with: [0xFF, 0xD8, 0xFF]) }
    static func isPNG(_ data: Data) -> Bool { data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) }

    /// Width and height from a PNG's header or a JPEG's frame header (SOFn); nil for anything else.
    static func size(of data: Data) -> (width: Int, height: Int)? {
        let bytes = [UInt8](data.prefix(1 << 20))
        func big16(_ offset: Int) -> Int { Int(bytes[offset]) << 8 | Int(bytes[offset + 1]) }
        if isPNG(data), bytes.count >= 24 {
            return (big16(16) << 16 | big16(18), big16(20) << 16 | big16(22))
        }
        guard isJPEG(data) else { return nil }
        var offset = 2
        while offset + 9 < bytes.count, bytes[offset] == 0xFF {
            let marker = bytes[offset + 1]
            if marker == 0xFF { offset += 1; continue }  // fill byte
            let length = big16(offset + 2)
            // Start of frame: every SOFn but DHT (C4), JPG (C8) and DAC (CC).
            if (0xC0...0xCF).contains(marker), ![0xC4, 0xC8, 0xCC].contains(marker) {
                return (big16(offset + 7), big16(offset + 5))
            }
            offset += 2 + length
        }
        return nil
    }
}

/// Artwork on this machine, scaled once per size: `<data folder>/artwork/<name>-<hash>-<w>x<h>.png`,
/// made from the original the first time a size is asked for (written to a temporary file and
/// renamed, so a reader never sees half an image), then reused while the original is older.
enum ArtworkCache {
    static func directory(_ environment: MusicKitEnvironment = .current) -> URL {
        environment.dataDirectory.appendingPathComponent("artwork")
    }

    /// The file of the image at `path` scaled to `width`×`height` (made now if needed).
    static func file(for path: String, width: Int, height: Int) throws -> URL {
        let source = URL(fileURLWithPath: path)
        let hash = LibraryStore.id(prefix: "", source.standardizedFileURL.path)  // stable across runs
        let name = "\(source.deletingPathExtension().lastPathComponent)-\(hash)-\(width)x\(height).png"
        let directory = directory()
        let target = directory.appendingPathComponent(name)
        var original = stat()
        var cached = stat()
        guard stat(path, &original) == 0 else { throw RGBAImage.Failure(description: "\(path): no such file") }
        if stat(target.path, &cached) == 0, cached.st_mtim.tv_sec >= original.st_mtim.tv_sec { return target }
        let image = try RGBAImage(imageFile: path).scaled(width: width, height: height)
        try PrivateFiles.ensureDirectory(directory)
        try PrivateFiles.writeAtomically(try image.pngData(), to: target)  // 0600, as every file of ours
        return target
    }
}
