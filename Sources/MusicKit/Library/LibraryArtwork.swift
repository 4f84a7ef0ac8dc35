import Foundation

/// The artwork of a library file, as the Apple Music API's artwork object (`url`, `width`,
/// `height`): the cover stored in the file (MP4's `covr`), kept once per distinct image in
/// `<data>/library-artwork/`, else an image in the file's folder (`cover.jpg`, `folder.png`,
/// `front.jpg`, ...), used where it is. PNG and JPEG; nil when there is none.
///
/// One per scan: a folder's image is looked for once.
final class LibraryArtwork {
    static let folderImageNames = ["cover", "folder", "front", "album", "albumart"]
    let directory: URL
    private var folders: [String: JSONValue?] = [:]

    init(directory: URL) {
        self.directory = directory
    }

    static func directory(_ environment: MusicKitEnvironment) -> URL {
        environment.dataDirectory.appendingPathComponent("library-artwork")
    }

    func artwork(embedded: Data?, besides path: String) -> JSONValue? {
        if let embedded, let stored = store(embedded) { return stored }
        let folder = (path as NSString).deletingLastPathComponent
        if let known = folders[folder] { return known }
        let found = folderImage(in: folder)
        folders[folder] = found
        return found
    }

    /// The embedded image written to the artwork folder (named by its contents, so an album's
    /// tracks share one file), as an artwork object.
    private func store(_ image: Data) -> JSONValue? {
        guard let size = ImageFile.size(of: image) else { return nil }
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in image {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let file = directory.appendingPathComponent(String(hash, radix: 16) + (ImageFile.isJPEG(image) ? ".jpg" : ".png"))
        if !FileManager.default.fileExists(atPath: file.path) {
            do {
                try PrivateFiles.ensureDirectory(directory)
                try PrivateFiles.writeAtomically(image, to: file)
            } catch {
                return nil
            }
        }
        return LibraryArtwork.object(file, size)
    }

    private func folderImage(in folder: String) -> JSONValue? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return nil }
        let candidates = names.filter { name in
            let url = URL(fileURLWithPath: name)
            return ["jpg", "jpeg", "png"].contains(url.pathExtension.lowercased())
                && LibraryArtwork.folderImageNames.contains(url.deletingPathExtension().lastPathComponent.lowercased())
        }.sorted { first, second in
            let rank = { (name: String) in LibraryArtwork.folderImageNames.firstIndex(of: URL(fileURLWithPath: name).deletingPathExtension().lastPathComponent.lowercased()) ?? 99 }
            return (rank(first), first) < (rank(second), second)
        }
        for name in candidates {
            let file = URL(fileURLWithPath: folder).appendingPathComponent(name)
            guard let handle = FileHandle(forReadingAtPath: file.path) else { continue }
            let head = handle.readData(ofLength: 1 << 16)
            try? handle.close()
            if let size = ImageFile.size(of: head) { return LibraryArtwork.object(file, size) }
        }
        return nil
    }

    private static func object(_ file: URL, _ size: (width: Int, height: Int)) -> JSONValue {
        .object(["url": .string(file.absoluteString), "width": .number(Double(size.width)), "height": .number(Double(size.height))])
    }
}
