import MusicKitCore

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
              let image = try? RGBAImage(imageFile: url.path) else { return nil }
        return try? TerminalImage.lines(for: image, columns: columns, rows: rows, colours: .fromEnvironment())
    }
}
