"""A page of headings, text, tables, pictures and preformatted text, as Markdown and HTML.

Reports are built once as a list of blocks and written both ways: Markdown reads well in
a repository or a CI log, HTML opens in any browser from a CI artifact with its PNGs.

    page = Page("perfscale report")
    page.table(["benchmark", "factor"], [["BM_X", "3.1x"]])
    page.write("out/report")  # out/report.md and out/report.html
"""

import html
import os


class Page:
    def __init__(self, title):
        self.title = title
        self.blocks = []

    def heading(self, text, level=2):
        self.blocks.append(("heading", level, text))

    def text(self, text):
        self.blocks.append(("text", text))

    def bullets(self, items):
        if items:
            self.blocks.append(("bullets", list(items)))

    def links(self, items, pages=False):
        """A list of (text, href) links; href relative to the page's folder. With pages,
        each href is the stem of a Page written both ways, linked as .md from the Markdown
        and as .html from the HTML, so each reads on in its own kind."""
        if items:
            self.blocks.append(("links", [(str(t), str(h)) for t, h in items], pages))

    def table(self, header, rows):
        if rows:
            self.blocks.append(("table", list(header), [list(map(str, r)) for r in rows]))

    def image(self, path, caption):
        """`path` relative to the page's folder, so the folder can be moved whole."""
        self.blocks.append(("image", path, caption))

    def preformatted(self, text):
        self.blocks.append(("pre", text))

    def markdown(self):
        out = ["# " + self.title, ""]
        for block in self.blocks:
            kind = block[0]
            if kind == "heading":
                out += ["#" * block[1] + " " + block[2], ""]
            elif kind == "text":
                out += [block[1], ""]
            elif kind == "bullets":
                out += ["- " + item for item in block[1]] + [""]
            elif kind == "links":
                out += ["- [%s](%s)" % (_md_link_text(t),
                                         (h + (".md" if block[2] else "")).replace(" ", "%20"))
                        for t, h in block[1]] + [""]
            elif kind == "table":
                out.append("| " + " | ".join(_md_cell(c) for c in block[1]) + " |")
                out.append("|" + "---|" * len(block[1]))
                out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block[2]]
                out.append("")
            elif kind == "image":
                out += ["![%s](%s)" % (block[2], block[1]), ""]
            elif kind == "pre":
                out += ["```text", block[1].rstrip("\n"), "```", ""]
        return "\n".join(out)

    def html(self):
        e = html.escape
        return "\n".join([
            "<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\"><title>%s</title>"
            % e(self.title), "<style>body{font-family:sans-serif;max-width:70em;margin:auto}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
            "text-align:left}pre{overflow-x:auto;font-size:80%}img{max-width:100%}"
            "</style></head><body>", "<h1>%s</h1>" % e(self.title), self.body_html(),
            "</body></html>"])

    def body_html(self):
        """The blocks as HTML without the document around them (every text escaped), for
        a page that embeds them, as the dashboard's run page does."""
        e = html.escape
        out = []
        for block in self.blocks:
            kind = block[0]
            if kind == "heading":
                out.append("<h%d>%s</h%d>" % (block[1], e(block[2]), block[1]))
            elif kind == "text":
                out.append("<p>%s</p>" % e(block[1]))
            elif kind == "bullets":
                out.append("<ul>%s</ul>" % "".join("<li>%s</li>" % e(i) for i in block[1]))
            elif kind == "links":
                out.append("<ul>%s</ul>" % "".join(
                    "<li><a href=\"%s\">%s</a></li>" % (e(h + (".html" if block[2] else "")), e(t))
                    for t, h in block[1]))
            elif kind == "table":
                out.append("<table><tr>%s</tr>%s</table>" % (
                    "".join("<th>%s</th>" % e(c) for c in block[1]),
                    "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % e(c) for c in row)
                            for row in block[2])))
            elif kind == "image":
                out.append("<figure><img src=\"%s\" alt=\"%s\"><figcaption>%s</figcaption>"
                           "</figure>" % (e(block[1]), e(block[2]), e(block[2])))
            elif kind == "pre":
                out.append("<pre>%s</pre>" % e(block[1]))
        return "\n".join(out)

    def write(self, stem):
        """Writes STEM.md and STEM.html; returns their paths."""
        os.makedirs(os.path.dirname(os.path.abspath(stem)), exist_ok=True)
        paths = []
        for suffix, text in ((".md", self.markdown()), (".html", self.html())):
            write_whole(stem + suffix, text + "\n")
            paths.append(stem + suffix)
        return paths


def write_whole(path, text):
    """Writes `path` whole or not at all: on a full disk a half page, or an empty one,
    reads as a report that said nothing."""
    temporary = "%s.tmp-%d" % (path, os.getpid())
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _md_link_text(text):
    return str(text).replace("[", "\\[").replace("]", "\\]").replace("\n", " ")


def _md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")
