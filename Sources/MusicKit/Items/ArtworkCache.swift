import Foundation
import Glibc

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
        let image = try RGBAImage(pngFile: path).scaled(width: width, height: height)
        try PrivateFiles.ensureDirectory(directory)
        let temporary = directory.appendingPathComponent(".\(name).\(getpid()).tmp")
        try image.writePNG(to: temporary.path)
        guard rename(temporary.path, target.path) == 0 else {
            unlink(temporary.path)
            throw RGBAImage.Failure(description: "\(target.path): \(String(cString: strerror(errno)))")
        }
        return target
    }
}

extension Artwork {
    /// The artwork drawn for a terminal: `rows` lines of block symbols `columns` cells wide,
    /// coloured as the terminal can show (24-bit when COLORTERM says so, else 256 or 16 colours;
    /// shapes only under NO_COLOR) — the terminal's counterpart of SwiftUI's `ArtworkImage`.
    /// nil when the image is not on this machine or cannot be drawn (libpng or libchafa missing).
    /// (Linux addition)
    public func terminalImage(columns: Int, rows: Int) -> [String]? {
        guard columns > 0, rows > 0 else { return nil }
        // Four pixels a cell across and eight down: as fine as block symbols can show.
        guard let url = url(width: columns * 4, height: rows * 8), url.isFileURL,
              let image = try? RGBAImage(pngFile: url.path) else { return nil }
        return try? TerminalImage.lines(for: image, columns: columns, rows: rows, colours: .fromEnvironment())
    }
}
