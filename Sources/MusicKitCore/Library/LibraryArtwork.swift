import PlatformSupport
import Foundation
import Glibc
import Synchronization

/// The artwork of a library file, as the Apple Music API's artwork object (`url`, `width`,
/// `height`): the cover stored in the file (MP4's `covr`), kept once per distinct image in
/// `<data>/library-artwork/`, else an image in the file's folder (`cover.jpg`, `folder.png`,
/// `front.jpg`, ... in their usual spellings), used where it is. PNG and JPEG; nil when none.
///
/// A folder's image is looked for once per instance: one per library scan, and one per process
/// for the songs made from files (`Song(fileURL:)`, `forFiles`). Candidate names are checked one
/// by one (a stat of a plain path each), never by listing the folder, which may hold thousands of
/// files: `musickit play FILE` makes its song before the first sound.
///
/// Thread safety: any thread.
final class LibraryArtwork: Sendable {
    /// Folder image names, in the order they are preferred: the spellings rippers and players use.
    static let folderImageNames = [
        "cover.jpg", "cover.png", "cover.jpeg", "Cover.jpg", "Cover.png", "Cover.jpeg", "COVER.JPG", "COVER.PNG",
        "folder.jpg", "folder.png", "Folder.jpg", "Folder.png", "FOLDER.JPG",
        "front.jpg", "front.png", "Front.jpg", "Front.png", "FRONT.JPG",
        "album.jpg", "album.png", "Album.jpg", "Album.png", "AlbumArt.jpg", "albumart.jpg",
    ]
    /// Where embedded images are kept; asked only when one is stored.
    private let directory: @Sendable () -> URL
    private let folders = Mutex<[String: JSONValue?]>([:])

    init(directory: URL) {
        self.directory = { directory }
    }

    private init(directory: @escaping @Sendable () -> URL) {
        self.directory = directory
    }

    static func directory(_ environment: MusicKitEnvironment) -> URL {
        environment.dataDirectory.appendingPathComponent("library-artwork")
    }

    /// The process's instance for songs made from files one at a time: their embedded images go
    /// to the current environment's data folder (`MusicKitEnvironment.current`, read only then).
    static let forFiles = LibraryArtwork(directory: { directory(.current) })

    func artwork(embedded: Data?, besides path: String) -> JSONValue? {
        if let embedded, let stored = store(embedded) { return stored }
        let folder = (path as NSString).deletingLastPathComponent
        if let known = folders.withLock({ $0[folder] }) { return known }
        let found = folderImage(in: folder)
        folders.withLock { $0[folder] = found }
        return found
    }

    /// The embedded image written to the artwork folder (named by its contents, so an album's
    /// tracks share one file), as an artwork object.
    private func store(_ image: Data) -> JSONValue? {
        guard let size = ImageFile.size(of: image) else { return nil }
        let name = String(LibraryStore.fnv1a(image), radix: 16) + (ImageFile.isJPEG(image) ? ".jpg" : ".png")
        let directory = directory()
        let file = directory.appendingPathComponent(name)
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
        let prefix = folder.isEmpty || folder.hasSuffix("/") ? folder : folder + "/"
        for name in LibraryArtwork.folderImageNames {
            // A plain path: a URL per candidate would stat the folder again for each.
            let path = prefix + name
            var status = stat()
            guard stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
                  let handle = FileHandle(forReadingAtPath: path) else { continue }
            let head = handle.readData(ofLength: 1 << 16)
            try? handle.close()
            if let size = ImageFile.size(of: head) {
                return LibraryArtwork.object(URL(fileURLWithPath: path, isDirectory: false), size)
            }
        }
        return nil
    }

    private static func object(_ file: URL, _ size: (width: Int, height: Int)) -> JSONValue {
        .object(["url": .string(file.absoluteString), "width": .number(Double(size.width)), "height": .number(Double(size.height))])
    }
}
