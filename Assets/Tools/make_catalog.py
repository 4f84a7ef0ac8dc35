#!/usr/bin/env python3
"""Writes the bundled catalog (Assets/Catalog) and its artwork (Assets/Artwork).

The catalog is a set of Apple Music API documents (songs, albums with tracks, artists with
albums, genres, playlists with tracks, charts) for two storefronts, `us` and `gb`, describing the
20 preview clips and the gapless album in Assets/, plus `equivalents.json`, which says which
resources are the same recording in another storefront or in a clean version.

What differs between the storefronts, on purpose, so that equivalents have work to do:
- the four Sectoid songs and their album have other IDs in `gb`;
- "Media Threat" (Maxstack) is not in the `gb` catalog;
- "Wings of Cruelty" is marked explicit, and "Wings of Cruelty (Clean)" is its clean version in
  both storefronts. The ratings are assigned to model the feature: both entries play the same
  30-second excerpt.

Track numbers, years and genres come from Tools/previews-catalog.json (make_previews.sh); IDs,
UPCs, ISRCs and chart orders are this project's own (ISRCs use the country code "XX").
The artwork is drawn as SVG and rendered to 600x600 PNG (what MusicKit reads) with rsvg-convert
(Debian: librsvg2-bin, needed only to run this script).
Usage: python3 Assets/Tools/make_catalog.py   (from the repository root; writes the files)
"""
import hashlib
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
META = json.load(open(os.path.join(ROOT, "Tools", "previews-catalog.json")))

GENRES = {"metal": ("1153", "Metal"), "electronic": ("7", "Electronic"), "rock": ("21", "Rock")}
MUSIC_GENRE = ("34", "Music")
ARTISTS = {
    "obsidian-shell": dict(id="1760000001", colors=("1b1020", "e8c8f0", "c9a6d6", "a985b8", "8b6a9c")),
    "maxstack": dict(id="1760000002", colors=("0b1a2e", "9fd8ff", "7cc0ef", "5da6d9", "4a8bbd")),
    "sectoid": dict(id="1760000003", colors=("2a0d06", "ffcf8a", "f2b46a", "d9984f", "b97c3d")),
}
ALBUM_IDS = {"elysia": "1761000001", "angelic-asylum": "1761000002", "es-ost": "1761000003",
             "es-advanced-research": "1761000004", "sectoid-fof": "1761000005", "through-space-gapless": "1761000006"}
ALBUM_COLORS = {
    "elysia": ("3a0f2e", "ffd6ec", "f0b3d3", "d993ba", "bb76a0"),
    "angelic-asylum": ("101018", "f2f2ff", "ccccdd", "a9a9bd", "8a8aa0"),
    "es-ost": ("06202a", "a8f0ff", "82d8ec", "62bed6", "4aa3bd"),
    "es-advanced-research": ("12062a", "d8c2ff", "b9a0ef", "9c82d9", "8168bd"),
    "sectoid-fof": ("2e1204", "ffe0a8", "f5c57f", "dca85e", "bd8c45"),
    "through-space-gapless": ("000814", "e6f4ff", "bcd8f0", "94bcdf", "729fc8"),
}
GAPLESS = [("through-space-1", "Through Space, part 1", 352817), ("through-space-2", "Through Space, part 2", 352784),
           ("through-space-3", "Through Space, part 3", 352799)]
EXPLICIT_SONG = "os-asylum-09"


def song_id(index, storefront):
    # Sectoid songs have other IDs in gb.
    base = "1772" if storefront == "gb" and 17 <= index <= 20 else "1762"
    return f"{base}{index:06d}"


def album_id(key, storefront):
    return ("1771" + ALBUM_IDS[key][4:]) if storefront == "gb" and key == "sectoid-fof" else ALBUM_IDS[key]


def artwork(name, colors, size=600):
    bg, c1, c2, c3, c4 = colors
    return {"width": size, "height": size, "url": f"../../Artwork/{name}.png#{{w}}x{{h}}",
            "bgColor": bg, "textColor1": c1, "textColor2": c2, "textColor3": c3, "textColor4": c4}


def write_svg(name, title, subtitle, colors, seed):
    bg, c1, c2, c3, c4 = colors
    digest = hashlib.sha256(seed.encode()).digest()
    shapes = []
    for i in range(7):
        x, y = digest[i] * 1200 // 255, digest[i + 8] * 1200 // 255
        r = 80 + digest[i + 16] * 3
        color = (c2, c3, c4)[i % 3]
        shapes.append(f'<circle cx="{x}" cy="{y}" r="{r}" fill="#{color}" opacity="0.{25 + i * 7}"/>')
    svg = f'''<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="1200" viewBox="0 0 1200 1200">
  <title>{escape(title)}</title>
  <rect width="1200" height="1200" fill="#{bg}"/>
  {chr(10).join("  " + s for s in shapes).strip()}
  <rect x="0" y="880" width="1200" height="320" fill="#{bg}" opacity="0.82"/>
  <text x="60" y="1010" font-family="DejaVu Sans, sans-serif" font-size="{64 if len(title) < 28 else 46}" font-weight="bold" fill="#{c1}">{escape(title)}</text>
  <text x="60" y="1090" font-family="DejaVu Sans, sans-serif" font-size="44" fill="#{c2}">{escape(subtitle)}</text>
</svg>
'''
    os.makedirs(os.path.join(ROOT, "Artwork"), exist_ok=True)
    with open(os.path.join(ROOT, "Artwork", f"{name}.svg"), "w") as f:
        f.write(svg)
    # The PNG is what MusicKit reads (libpng) and scales; the SVG is its source.
    subprocess.run(["rsvg-convert", "-w", "600", "-h", "600", os.path.join(ROOT, "Artwork", f"{name}.svg"),
                    "-o", os.path.join(ROOT, "Artwork", f"{name}.png")], check=True)


def escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def build(storefront):
    artists_meta = {a["id"]: a for a in META["artists"]}
    tracks_meta = {t["id"]: t for t in META["tracks"]}
    albums = [dict(a) for a in META["albums"]]
    albums.append({"id": "through-space-gapless", "title": "Through Space (gapless excerpt)", "artist": "maxstack",
                   "year": 2012, "genre": "electronic", "tracks": [g[0] for g in GAPLESS]})
    songs, song_refs = [], {}
    index = 0
    album_of = {}
    for album in albums:
        for number, track in enumerate(album["tracks"], 1):
            album_of[track] = (album, number)

    def song(track_key, title, seconds, preview, number, album, explicit=None, index_=None, isrc=None):
        artist = artists_meta[album["artist"]]
        genre = GENRES[album["genre"]]
        sid = song_id(index_, storefront)
        attributes = {
            "name": title, "artistName": artist["name"], "albumName": album["title"],
            "genreNames": [genre[1], MUSIC_GENRE[1]], "trackNumber": number, "discNumber": 1,
            "durationInMillis": round(seconds * 1000), "hasLyrics": False, "isrc": isrc,
            "artwork": artwork(album["id"], ALBUM_COLORS[album["id"]]),
            "previews": [{"url": preview}],
            "playParams": {"id": sid, "kind": "song"},
        }
        if album.get("year"):
            attributes["releaseDate"] = f"{album['year']}-01-01"
        if explicit:
            attributes["contentRating"] = explicit
        return {"id": sid, "type": "songs", "href": f"/v1/catalog/{storefront}/songs/{sid}", "attributes": attributes,
                "relationships": {
                    "artists": {"data": [{"id": ARTISTS[album["artist"]]["id"], "type": "artists"}]},
                    "albums": {"data": [{"id": album_id(album["id"], storefront), "type": "albums"}]},
                    "genres": {"data": [{"id": genre[0], "type": "genres"}]}}}

    for i, track in enumerate(META["tracks"], 1):
        album, number = album_of[track["id"]]
        if storefront == "gb" and track["title"] == "Media Threat":
            continue
        s = song(track["id"], track["title"], 30.0, f"../../Previews/{track['files']['ogg']}", track["trackNumber"], album,
                 explicit="explicit" if track["id"] == EXPLICIT_SONG else None, index_=i, isrc=f"XXOMK08{i:05d}")
        songs.append(s)
        song_refs[track["id"]] = s["id"]
    gapless_album = albums[-1]
    for j, (key, title, frames) in enumerate(GAPLESS, 21):
        s = song(key, title, frames / 44100, f"../../Albums/through-space-gapless/part-{j - 20}.flac", j - 20,
                 gapless_album, index_=j, isrc=f"XXOMK12{j:05d}")
        songs.append(s)
        song_refs[key] = s["id"]
    # The clean version of the explicit song.
    explicit_meta = tracks_meta[EXPLICIT_SONG]
    clean_album, clean_number = album_of[EXPLICIT_SONG]
    clean = song("clean", explicit_meta["title"] + " (Clean)", 30.0, f"../../Previews/{explicit_meta['files']['ogg']}",
                 clean_number, clean_album, explicit="clean", index_=24, isrc="XXOMK0800024")
    songs.append(clean)

    album_docs = []
    for album in albums:
        artist = artists_meta[album["artist"]]
        genre = GENRES[album["genre"]]
        aid = album_id(album["id"], storefront)
        track_ids = [song_refs[t] for t in album["tracks"] if t in song_refs]
        attributes = {"name": album["title"], "artistName": artist["name"], "trackCount": len(track_ids),
                      "genreNames": [genre[1], MUSIC_GENRE[1]], "isSingle": False, "isComplete": True,
                      "isCompilation": False, "upc": f"0{int(aid) % 10**11:011d}9",
                      "copyright": f"\u2117 {album['year'] or 2011} {artist.get('realName', artist['name'])}",
                      "artwork": artwork(album["id"], ALBUM_COLORS[album["id"]]),
                      "playParams": {"id": aid, "kind": "album"},
                      "editorialNotes": {"short": f"Excerpts from {artist['name']}'s {album['title']}.",
                                         "standard": artist.get("note", "")}}
        if album.get("year"):
            attributes["releaseDate"] = f"{album['year']}-01-01"
        if album["id"] == "through-space-gapless":
            attributes["editorialNotes"] = {"short": "One continuous recording cut into three tracks: plays without a gap.",
                                            "standard": "24 seconds of Maxstack's \"Through Space\", split at frames 352,817 and 705,601."}
        same_artist = [a for a in albums if a["artist"] == album["artist"] and a["id"] != album["id"]]
        doc = {"id": aid, "type": "albums", "href": f"/v1/catalog/{storefront}/albums/{aid}", "attributes": attributes,
               "relationships": {
                   "artists": {"data": [{"id": ARTISTS[album["artist"]]["id"], "type": "artists"}]},
                   "genres": {"data": [{"id": genre[0], "type": "genres"}]},
                   "tracks": {"data": [{"id": t, "type": "songs"} for t in track_ids]}},
               "views": {
                   "related-albums": {"attributes": {"title": "More by " + artist["name"]},
                                      "data": [{"id": album_id(a["id"], storefront), "type": "albums"} for a in same_artist]}}}
        if album["id"] == "es-advanced-research":
            doc["views"]["other-versions"] = {"attributes": {"title": "Other Versions"},
                                              "data": [{"id": album_id("through-space-gapless", storefront), "type": "albums"}]}
        album_docs.append(doc)

    artist_docs = []
    for key, artist in artists_meta.items():
        mine = [a for a in albums if a["artist"] == key]
        latest = max(mine, key=lambda a: a.get("year") or 0)
        top = [song_refs[t] for a in mine for t in a["tracks"] if t in song_refs][:5]
        genre = GENRES[artist["genres"][0]]
        artist_docs.append({
            "id": ARTISTS[key]["id"], "type": "artists", "href": f"/v1/catalog/{storefront}/artists/{ARTISTS[key]['id']}",
            "attributes": {"name": artist["name"], "genreNames": [genre[1]],
                           "artwork": artwork(f"artist-{key}", ARTISTS[key]["colors"]),
                           "editorialNotes": {"short": artist.get("note", ""), "standard": artist.get("note", "")}},
            "relationships": {"albums": {"data": [{"id": album_id(a["id"], storefront), "type": "albums"} for a in mine]},
                              "genres": {"data": [{"id": genre[0], "type": "genres"}]}},
            "views": {"top-songs": {"attributes": {"title": "Top Songs"}, "data": [{"id": s, "type": "songs"} for s in top]},
                      "latest-release": {"attributes": {"title": "Latest Release"},
                                         "data": [{"id": album_id(latest["id"], storefront), "type": "albums"}]}}})

    genre_docs = [{"id": gid, "type": "genres", "href": f"/v1/catalog/{storefront}/genres/{gid}",
                   "attributes": {"name": name, "parentId": MUSIC_GENRE[0], "parentName": MUSIC_GENRE[1]}}
                  for gid, name in GENRES.values()]
    genre_docs.append({"id": MUSIC_GENRE[0], "type": "genres", "href": f"/v1/catalog/{storefront}/genres/34",
                       "attributes": {"name": MUSIC_GENRE[1]}})

    playlist_docs = []
    playlists = list(META["playlists"]) + [{"id": "gapless-demo", "name": "Gapless Demo",
                                            "tracks": [g[0] for g in GAPLESS]}]
    for playlist in playlists:
        pid = "pl." + hashlib.md5(playlist["id"].encode()).hexdigest()
        track_ids = [song_refs[t] for t in playlist["tracks"] if t in song_refs]
        colors = ("151515", "f5f5f5", "d0d0d0", "ababab", "8a8a8a")
        playlist_docs.append({
            "id": pid, "type": "playlists", "href": f"/v1/catalog/{storefront}/playlists/{pid}",
            "attributes": {"name": playlist["name"], "curatorName": "OpenMusicKit Editors", "playlistType": "editorial",
                           "isChart": False, "lastModifiedDate": "2026-11-01T00:00:00Z",
                           "editorialNotes": {"short": f"{len(track_ids)} tracks", "standard": f"{playlist['name']}: {len(track_ids)} bundled tracks."},
                           "artwork": artwork(f"playlist-{playlist['id']}", colors),
                           "playParams": {"id": pid, "kind": "playlist"}},
            "relationships": {"tracks": {"data": [{"id": t, "type": "songs"} for t in track_ids]},
                              "curator": {"data": [{"id": "1764000001", "type": "apple-curators"}]}}})
    curator = {"id": "1764000001", "type": "apple-curators", "href": f"/v1/catalog/{storefront}/apple-curators/1764000001",
               "attributes": {"name": "OpenMusicKit Editors", "editorialNotes": {"short": "Playlists of the bundled music."}},
               "relationships": {"playlists": {"data": [{"id": p["id"], "type": "playlists"} for p in playlist_docs]}}}

    # Charts: a fixed "most played" order per storefront (this project's own numbers).
    order = sorted(songs, key=lambda s: hashlib.md5((storefront + s["attributes"]["name"]).encode()).hexdigest())
    charts = {"results": {
        "songs": [{"chart": "most-played", "name": "Top Songs", "orderId": "most-played:songs",
                   "data": [{"id": s["id"], "type": "songs"} for s in order]}],
        "albums": [{"chart": "most-played", "name": "Top Albums", "orderId": "most-played:albums",
                    "data": [{"id": a["id"], "type": "albums"} for a in sorted(album_docs, key=lambda a: a["attributes"]["name"])]}],
        "playlists": [{"chart": "most-played", "name": "Top Playlists", "orderId": "most-played:playlists",
                       "data": [{"id": p["id"], "type": "playlists"} for p in playlist_docs]}]}}
    return {"songs": songs, "albums": album_docs, "artists": artist_docs, "genres": genre_docs,
            "playlists": playlist_docs + [curator], "charts": charts}, song_refs


def main():
    catalogs = {}
    for storefront in ("us", "gb"):
        docs, refs = build(storefront)
        catalogs[storefront] = refs
        folder = os.path.join(ROOT, "Catalog", storefront)
        os.makedirs(folder, exist_ok=True)
        for name, data in docs.items():
            body = data if name == "charts" else {"data": data}
            with open(os.path.join(folder, f"{name}.json"), "w") as f:
                json.dump(body, f, ensure_ascii=False, indent=1)
                f.write("\n")
    groups = []
    for key, us_id in catalogs["us"].items():
        gb_id = catalogs["gb"].get(key)
        if gb_id and gb_id != us_id:
            groups.append({"type": "songs", "members": [{"storefront": "us", "id": us_id}, {"storefront": "gb", "id": gb_id}]})
    explicit = EXPLICIT_SONG
    groups.append({"type": "songs", "members": [
        {"storefront": "us", "id": catalogs["us"][explicit]}, {"storefront": "us", "id": song_id(24, "us")},
        {"storefront": "gb", "id": catalogs["gb"][explicit]}, {"storefront": "gb", "id": song_id(24, "gb")}]})
    groups.append({"type": "albums", "members": [{"storefront": "us", "id": album_id("sectoid-fof", "us")},
                                                 {"storefront": "gb", "id": album_id("sectoid-fof", "gb")}]})
    with open(os.path.join(ROOT, "Catalog", "equivalents.json"), "w") as f:
        json.dump({"equivalents": groups}, f, indent=1)
        f.write("\n")
    # Artwork
    for album in META["albums"] + [{"id": "through-space-gapless", "title": "Through Space", "artist": "maxstack"}]:
        artist = next(a for a in META["artists"] if a["id"] == album["artist"])
        write_svg(album["id"], album["title"], artist["name"], ALBUM_COLORS[album["id"]], album["id"])
    for key, artist in ARTISTS.items():
        name = next(a["name"] for a in META["artists"] if a["id"] == key)
        write_svg(f"artist-{key}", name, "Artist", artist["colors"], key)
    for playlist in list(META["playlists"]) + [{"id": "gapless-demo", "name": "Gapless Demo"}]:
        write_svg(f"playlist-{playlist['id']}", playlist["name"], "OpenMusicKit Editors",
                  ("151515", "f5f5f5", "d0d0d0", "ababab", "8a8a8a"), playlist["id"])


if __name__ == "__main__":
    main()
