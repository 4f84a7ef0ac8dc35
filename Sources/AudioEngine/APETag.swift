import Glibc

/// An APEv2 tag at the end of a file (before an ID3v1 tag, if any): where mp3gain and aacgain
/// write their ReplayGain values (`REPLAYGAIN_TRACK_GAIN` …) into MP3 files. Neither FFmpeg's MP3
/// demuxer (5.1) nor libmpg123 reads one, so the loudness tags are looked for here too. Only
/// UTF-8 text items are kept; keys are returned uppercased.
///
/// Format (apev2 specification): a 32-byte footer — "APETAGEX", version (1000 or 2000), the
/// tag's size without a header, the item count, flags, 8 reserved bytes — after the items, each
/// a value size, flags, a NUL-terminated ASCII key and the value.
enum APETag {
    /// The largest tag read (mp3gain's are a few hundred bytes; anything huge is not one).
    static let largestTagBytes = 1 << 20

    /// The text items of the file's APE tag, nil when it has none (or it cannot be read).
    static func items(atPath path: String) -> [String: String]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        guard fseeko(file, 0, SEEK_END) == 0 else { return nil }
        let size = Int(ftello(file))
        // The footer sits at the end, or before a 128-byte ID3v1 tag.
        for end in [size, size - 128] where end >= 32 {
            var footer = [UInt8](repeating: 0, count: 32)
            guard fseeko(file, off_t(end - 32), SEEK_SET) == 0, fread(&footer, 1, 32, file) == 32 else { continue }
            guard footer.starts(with: Array("APETAGEX".utf8)) else { continue }
            func word(_ offset: Int) -> Int {
                Int(footer[offset]) | Int(footer[offset + 1]) << 8 | Int(footer[offset + 2]) << 16 | Int(footer[offset + 3]) << 24
            }
            let version = word(8), tagBytes = word(12), count = word(16)
            guard version == 1000 || version == 2000, tagBytes >= 32, tagBytes <= min(largestTagBytes, end), count < 10_000 else {
                return nil
            }
            var body = [UInt8](repeating: 0, count: tagBytes - 32)
            guard fseeko(file, off_t(end - tagBytes), SEEK_SET) == 0, fread(&body, 1, body.count, file) == body.count else { return nil }
            return parse(body, count: count)
        }
        return nil
    }

    /// The items of a tag's body (what comes before its footer).
    static func parse(_ body: [UInt8], count: Int) -> [String: String] {
        var items: [String: String] = [:]
        var offset = 0
        for _ in 0..<count {
            guard offset + 8 <= body.count else { break }
            let valueBytes = Int(body[offset]) | Int(body[offset + 1]) << 8 | Int(body[offset + 2]) << 16 | Int(body[offset + 3]) << 24
            let flags = Int(body[offset + 4]) | Int(body[offset + 5]) << 8 | Int(body[offset + 6]) << 16 | Int(body[offset + 7]) << 24
            offset += 8
            guard let keyEnd = body[offset...].firstIndex(of: 0), keyEnd - offset >= 2 else { break }
            let key = String(decoding: body[offset..<keyEnd], as: UTF8.self).uppercased()
            offset = keyEnd + 1
            guard valueBytes >= 0, offset + valueBytes <= body.count else { break }
            if (flags >> 1) & 3 == 0 {  // UTF-8 text (not binary, not an external locator)
                items[key] = String(decoding: body[offset..<offset + valueBytes], as: UTF8.self)
            }
            offset += valueBytes
        }
        return items
    }
}
