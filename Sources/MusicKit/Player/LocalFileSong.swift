import AudioEngine
import Foundation

extension Song {
    /// A song for an audio file, with its tags (title, artist, album, duration) and artwork (the
    /// cover stored in it, or the folder's `cover.jpg` and the like), to put in a player's queue
    /// (Linux addition). It plays like a library song: no subscription needed. A file that
    /// cannot be read still makes a song (named after the file); the player skips it with the
    /// reason when it gets there.
    public init(fileURL: URL) {
        let path = fileURL.standardizedFileURL.path
        var attributes: [String: JSONValue] = [
            "name": .string(fileURL.deletingPathExtension().lastPathComponent),
            "filePath": .string(path),
        ]
        let id = LibraryStore.id(prefix: "i.", path)
        attributes["playParams"] = .object(["id": .string(id), "kind": .string("song"), "isLibrary": .bool(true)])
        if let decoder = try? AudioFileDecoder(path: path) {
            let info = decoder.info
            attributes["artwork"] = LibraryArtwork.forFiles.artwork(embedded: decoder.coverArt, besides: path)
            if let title = info.title, !title.isEmpty { attributes["name"] = .string(title) }
            if let artist = info.artist { attributes["artistName"] = .string(artist) }
            if let album = info.album { attributes["albumName"] = .string(album) }
            if let genre = info.genre { attributes["genreNames"] = .array([.string(genre)]) }
            if let track = info.trackNumber { attributes["trackNumber"] = .number(Double(track)) }
            attributes["durationInMillis"] = .number((info.duration * 1000).rounded())
            decoder.keepForReuse()  // the player opening the file next takes it
        }
        self.init(resource: ResourceObject(id: id, type: "library-songs", href: "/v1/me/library/songs/\(id)",
                                           attributes: attributes))
    }
}
