//! Readable text from an HTML page, for ingesting `url` documents: the headings, paragraphs,
//! list items, table cells, quotes and preformatted blocks of the page, in document order,
//! one per paragraph; scripts, styles, navigation, headers, footers, asides and forms are
//! dropped.

use scraper::{ElementRef, Html, Node};

/// Elements whose text is kept, each as its own paragraph.
const BLOCKS: [&str; 14] = [
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "li",
    "td",
    "th",
    "pre",
    "blockquote",
    "dd",
    "dt",
];
/// Elements dropped with everything inside them.
const SKIPPED: [&str; 11] = [
    "script", "style", "noscript", "nav", "header", "footer", "aside", "form", "template", "svg",
    "iframe",
];

/// Elements inside running text: no word break around them.
const INLINE: [&str; 20] = [
    "a", "abbr", "b", "cite", "code", "em", "i", "kbd", "mark", "q", "s", "small", "span",
    "strong", "sub", "sup", "time", "u", "var", "label",
];

/// The page's readable text, paragraphs separated by blank lines. Falls back to all the
/// body's text when the page has no block elements.
pub fn readable_text(html: &str) -> String {
    let document = Html::parse_document(html);
    let mut paragraphs = Vec::new();
    collect(document.root_element(), &mut paragraphs);
    if paragraphs.is_empty() {
        let mut all = String::new();
        text_of(document.root_element(), &mut all);
        return normalise(&all);
    }
    paragraphs.join("\n\n")
}

fn collect(element: ElementRef<'_>, out: &mut Vec<String>) {
    let name = element.value().name();
    if SKIPPED.contains(&name) {
        return;
    }
    if BLOCKS.contains(&name) {
        let mut text = String::new();
        text_of(element, &mut text);
        let text = normalise(&text);
        if !text.is_empty() {
            out.push(text);
        }
        return;
    }
    for child in element.children() {
        if let Some(child) = ElementRef::wrap(child) {
            collect(child, out);
        }
    }
}

/// All text under an element, skipping dropped elements; `<br>` becomes a space.
fn text_of(element: ElementRef<'_>, out: &mut String) {
    for child in element.children() {
        match child.value() {
            Node::Text(text) => out.push_str(text),
            Node::Element(e) if e.name() == "br" => out.push(' '),
            Node::Element(e) if SKIPPED.contains(&e.name()) => {}
            Node::Element(e) => {
                if let Some(child) = ElementRef::wrap(child) {
                    let inline = INLINE.contains(&e.name());
                    if !inline {
                        out.push(' ');
                    }
                    text_of(child, out);
                    if !inline {
                        out.push(' ');
                    }
                }
            }
            _ => {}
        }
    }
}

fn normalise(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_headings_and_paragraphs_and_drops_the_chrome() {
        let page = r#"<html><head><title>Help</title><style>p{color:red}</style>
            <script>var tracking = "secret";</script></head><body>
            <nav><a href="/">Home</a> <a href="/shop">Shop</a></nav>
            <header>Site banner</header>
            <h1>Returns</h1>
            <p>Returns are accepted within <b>30 days</b>.</p>
            <ul><li>Keep the receipt</li><li>Use the original box</li></ul>
            <footer>Copyright</footer></body></html>"#;
        let text = readable_text(page);
        assert_eq!(
            text,
            "Returns\n\nReturns are accepted within 30 days.\n\nKeep the receipt\n\nUse the original box"
        );
        for dropped in ["tracking", "Home", "banner", "Copyright", "color"] {
            assert!(!text.contains(dropped), "{dropped} leaked into {text:?}");
        }
    }

    #[test]
    fn a_page_without_blocks_gives_its_text() {
        assert_eq!(
            readable_text("<div>Just <span>some</span> text</div>"),
            "Just some text"
        );
    }
}
