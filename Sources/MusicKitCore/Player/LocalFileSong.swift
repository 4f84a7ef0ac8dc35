import AudioEngine
import Foundation

extension Song {
    /// A song for an audio file, with its tags (title, artist, album, duration) and artwork (the
    /// cover stored in it, or the folder's `cover.jpg` and the like), to put in a player's queue
    /// (Linux addition). It plays like a library song: no subscription needed. A file that
    /// cannot be read still makes a song (named after the file); the player skips it with the
    /// reason when it gets there.
    public init(fileURL: URL) {
        self.init(filePath: fileURL.path)
    }

    /// `Song(fileURL:)` for a path, absolute or relative to the working directory, as typed on a
    /// command line: the URL's own accessors cost `musickit play FILE` ~0.2 ms of its start
    /// (`URL.path` builds its percent-decoding tables on its first call).
    package init(filePath: String) {
        let path = Song.standardizedPath(filePath)
        var attributes: [String: JSONValue] = [
            "name": .string(Song.nameWithoutExtension(ofFileAt: path)),
            "filePath": .string(path),
        ]
        let id = LibraryStore.id(prefix: "i.", path)
        attributes["playParams"] = .object(["id": .string(id), "kind": .string("song"), "isLibrary": .bool(true)])
        if let decoder = try? AudioFileDecoder.open(path: path) {
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

    /// `URL(fileURLWithPath: path).standardizedFileURL.path`: the absolute path (a relative one
    /// taken from the working directory) with "." and ".." resolved lexically (symbolic links are
    /// not followed) and no trailing slash. Written out because Foundation's standardization
    /// costs its first call ~0.25 ms (type metadata it looks up by mangled name), which
    /// `musickit play FILE` paid before its first sound.
    package static func standardizedPath(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var components: [Substring] = []
        for component in absolute.split(separator: "/", omittingEmptySubsequences: true) {
            switch component {
            case ".": continue
            case "..": _ = components.popLast()
            default: components.append(component)
            }
        }
        return "/" + components.joined(separator: "/")
    }

    /// The file's name without its extension (`URL.deletingPathExtension().lastPathComponent`):
    /// what a song without a title tag is called, made from a file or found by a library scan.
    static func nameWithoutExtension(ofFileAt path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex, name.index(after: dot) != name.endIndex else { return name }
        return String(name[..<dot])
    }
}

extension Song {
    /// The file a local or library song plays, nil for catalog songs (for the command line's
    /// path order).
    package var filePath: String? { resource.string("filePath") }

    /// MPD's database order, which `musickit play TERM` follows too: library files by folder (a
    /// folder's songs before its subfolders'), in a folder by disc, track, then file name (as
    /// MPD's `song_cmp`: a two-disc album in one folder plays disc 1 first); then catalog songs
    /// by artist, album, disc and track.
    package static func inLibraryOrder(_ songs: [Song]) -> [Song] {
        func byDiscAndTrack(_ x: ResourceObject, _ y: ResourceObject) -> Bool? {
            for key in ["discNumber", "trackNumber"] {
                let (p, q) = (x.int(key) ?? 0, y.int(key) ?? 0)
                if p != q { return p < q }
            }
            return nil
        }
        return songs.sorted { a, b in
            let (x, y) = (a.resource, b.resource)
            let (pathX, pathY) = (a.filePath, b.filePath)
            if (pathX == nil) != (pathY == nil) { return pathX != nil }
            if let pathX, let pathY, pathX != pathY {
                // Folder by folder, name by name, as MPD walks its tree.
                let folderX = pathX.split(separator: "/").dropLast(), folderY = pathY.split(separator: "/").dropLast()
                if folderX != folderY {
                    for (p, q) in zip(folderX, folderY) where p != q { return p.localizedStandardCompare(q) == .orderedAscending }
                    return folderX.count < folderY.count  // a folder's own songs before its subfolders'
                }
                if let order = byDiscAndTrack(x, y) { return order }
                return pathX.localizedStandardCompare(pathY) == .orderedAscending
            }
            for key in ["artistName", "albumName"] {
                let (p, q) = (x.string(key) ?? "", y.string(key) ?? "")
                if p != q { return p.localizedStandardCompare(q) == .orderedAscending }
            }
            return byDiscAndTrack(x, y) ?? (a.title < b.title)
        }
    }
}
