#!/usr/bin/env python3
"""Build the before/after site variants of the why corpus.

usage: variants.py SITE_DIR OUT_DIR [PAIR...]
SITE_DIR is testdata/site (main/ and thirdparty/). The base of every variant is main/ with
testdata/psi-before/site-before.diff applied (the sample site before its bad publish: no chat
widget, no promo banner, sized images), so each pair below differs by ONE small change.
For each pair it writes OUT_DIR/<pair>/{before,after}/{main,thirdparty}; change.diff is
`diff -ruN before after` of those trees (binary files are named, not inlined).
"""
import json, os, random, shutil, subprocess, sys, zlib, struct

SITE, OUT = sys.argv[1], sys.argv[2]
ONLY = set(sys.argv[3:])
HERE = os.path.dirname(os.path.abspath(__file__))
BEFORE_DIFF = os.path.join(SITE, '..', 'psi-before', 'site-before.diff')


def base(dst):
    shutil.copytree(os.path.join(SITE, 'main'), os.path.join(dst, 'main'))
    shutil.copytree(os.path.join(SITE, 'thirdparty'), os.path.join(dst, 'thirdparty'))
    subprocess.run(['patch', '-s', '-p6', '-d', os.path.join(dst, 'main'), '-i', os.path.abspath(BEFORE_DIFF)], check=True)
    return dst


def rd(d, p):
    return open(os.path.join(d, p), encoding='utf-8').read()


def wr(d, p, s):
    os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
    open(os.path.join(d, p), 'w', encoding='utf-8').write(s)


def sub(d, p, old, new):
    s = rd(d, p)
    assert old in s, (p, old)
    wr(d, p, s.replace(old, new, 1))


def route(d, site, path, v):
    p = os.path.join(d, site, '_routes.json')
    r = json.load(open(p)) if os.path.exists(p) else {}
    if v is None:
        r.pop(path, None)
    else:
        r[path] = v
    json.dump(r, open(p, 'w'), indent=2)
    open(p, 'a').write('\n')


def png(path, w, h, seed):
    """A photo-like RGB PNG (gradient + grain): a multi-MB un-optimized upload."""
    rnd = random.Random(seed)
    rows = []
    for y in range(h):
        row = bytearray([0])
        for x in range(w):
            n = rnd.randrange(48)
            row += bytes(((x * 255 // w + n) & 255, (y * 255 // h + n) & 255, (120 + n) & 255))
        rows.append(bytes(row))
    raw = b''.join(rows)

    def chunk(t, data):
        c = struct.pack('>I', len(data)) + t + data
        return c + struct.pack('>I', zlib.crc32(t + data) & 0xffffffff)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n')
        f.write(chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)))
        f.write(chunk(b'IDAT', zlib.compress(raw, 9)))
        f.write(chunk(b'IEND', b''))


def bundle(name, version, funcs, burn_ms, seed):
    """A content-hashed app bundle: `funcs` helper functions and a start-up task of burn_ms."""
    rnd = random.Random(seed)
    out = ['/* acme-app %s (webpack production build) */' % version, '(function(){']
    for i in range(funcs):
        out.append('function %s_%d(a,b){var r=[];for(var k=0;k<a.length;k++){r.push((a[k]*%d+b)%%%d)}return r.join("-%d")}'
                   % (name, i, rnd.randrange(10, 99), rnd.randrange(100, 999), i))
    out.append('var t0=performance.now(),acc=0;while(performance.now()-t0<%d){acc+=Math.sqrt(acc+1)}' % burn_ms)
    out.append('window.AcmeApp=window.AcmeApp||{};window.AcmeApp["%s"]={ready:true,acc:acc};' % name)
    out.append('})();')
    return '\n'.join(out) + '\n'


HOME = 'main/index.html'
HERO = '<img src="/static/img/hero.jpg" alt="Hiker on a mountain ridge at sunrise" class="hero-img" width="1600" height="900">'
HEAD_END = '<script src="/static/js/vendor.js"></script>\n</head>'
BODY_END = '</body>'


def v_heavy_lcp_png(b, a):
    png(os.path.join(a, 'main/static/img/hero-summer-2026.png'), 1600, 900, 42)
    sub(a, HOME, '/static/img/hero.jpg', '/static/img/hero-summer-2026.png')


def v_lcp_css_background(b, a):
    # both sides: a slow stylesheet (2.5 s) and a slow image server (2 s), as from a cold CDN, so an
    # image the stylesheet names is found late and the delay shows through this machine's noise
    for d in (b, a):
        route(d, 'main', '/static/css/main.css', {'delay': 2500})
        route(d, 'main', '/static/img/hero.jpg', {'delay': 2000})
    sub(a, HOME, HERO, '<div class="hero-bg" role="img" aria-label="Hiker on a mountain ridge at sunrise"></div>')
    s = rd(a, 'main/static/css/main.css')
    wr(a, 'main/static/css/main.css', s.rstrip('\n') + '\n.hero-bg{background:url(/static/img/hero.jpg) center/cover no-repeat;aspect-ratio:16/9;width:100%}\n')


TAG = '<script src="http://assets.tagmgr.test/launch-EN4f2a9c.min.js"></script>\n'
CONTAINER = '''/* tag manager container EN4f2a9c (sync embed), published rules: %s */
(function(){
  window.dataLayer = window.dataLayer || [];
  window.dataLayer.push({event: 'pageview', page: location.pathname});
  var t = performance.now(), x = 0; while (performance.now() - t < 40) { x += Math.random(); }
  var s = document.createElement('script'); s.async = true; s.src = 'http://static.hotjar.com/c/hotjar-3412345.js?sv=6&tm=1';
  document.head.appendChild(s);
%s})();
'''


def v_tag_manager_sync(b, a):
    for d in (b, a):
        sub(d, HOME, HEAD_END, HEAD_END.replace('</head>', TAG + '</head>'))
        route(d, 'thirdparty', '/launch-EN4f2a9c.min.js', {'delay': 150})
        route(d, 'thirdparty', '/abtest/experiments-7731.js', {'delay': 600})
        # the vendor's snippet carries every experiment's definition: ~180 KB, as such snippets do
        defs = ''.join('{id:%d,name:"exp-%d",traffic:%d,variants:["control","v%d-a","v%d-b"],audience:"seg-%d"},\n' % (i, i, i % 100, i, i, i % 37) for i in range(2200))
        wr(d, 'thirdparty/abtest/experiments-7731.js', '''/* A/B testing snippet (synchronous, anti-flicker): project 7731 */
(function(){var experiments=[
%s];var t=performance.now(),x=0;while(performance.now()-t<350){x+=Math.random()}
window.abtest={variant:(x>0?'B':'A'),experiments:experiments};document.documentElement.className+=' ab-'+window.abtest.variant;})();
''' % defs)
    wr(b, 'thirdparty/launch-EN4f2a9c.min.js', CONTAINER % ('pageview, hotjar', ''))
    wr(a, 'thirdparty/launch-EN4f2a9c.min.js', CONTAINER % ('pageview, hotjar, ab-test 7731',
       "  // rule 'ab-test 7731': the vendor asks for a synchronous load to avoid flicker\n"
       "  document.write('<script src=\"http://cdn.abtest.test/abtest/experiments-7731.js\"><\\/script>');\n"))


PRICING = 'main/pricing.html'  # a page whose largest paint is text


def v_font_other_host(b, a):
    ttf = os.path.join(SITE, 'thirdparty/fonts/brand.ttf')
    os.makedirs(os.path.join(b, 'main/static/fonts'), exist_ok=True)
    shutil.copy(ttf, os.path.join(b, 'main/static/fonts/brand.ttf'))
    wr(b, 'main/static/css/fonts.css', "@font-face{font-family:'BrandSans';src:url(/static/fonts/brand.ttf) format('truetype');font-weight:400;font-display:swap}\n")
    sub(b, PRICING, '<link rel="stylesheet" href="/static/css/main.css">', '<link rel="stylesheet" href="/static/css/main.css">\n<link rel="stylesheet" href="/static/css/fonts.css">')
    wr(a, 'thirdparty/fonts/brand-sans.css', "@font-face{font-family:'BrandSans';src:url(http://fonts.typehost.test/fonts/brand.ttf) format('truetype');font-weight:400}\n")
    route(a, 'thirdparty', '/fonts/brand-sans.css', {'delay': 250})
    sub(a, PRICING, '<link rel="stylesheet" href="/static/css/main.css">', '<link rel="stylesheet" href="/static/css/main.css">\n<link rel="stylesheet" href="http://fonts.typehost.test/fonts/brand-sans.css">')


def v_slow_route(b, a):
    route(a, 'main', '/pricing', {'delay': 1400})


BANNER = '''/* consent manager (simulated CMP): shows the cookie banner once its config is in */
(function(){
  setTimeout(function(){
    var d = document.createElement('div'); d.id = 'cmp-banner';
    d.style.cssText = 'background:#222;color:#fff;padding:22px 20px;font:16px/1.4 Arial,sans-serif';
    d.innerHTML = '<strong>We value your privacy.</strong> We and our 312 partners use cookies to personalise content and ads. <button>Accept all</button> <button>Settings</button>';
    document.body.insertBefore(d, document.body.firstChild);
  }, 1200);
})();
'''


def v_late_consent_banner(b, a):
    wr(a, 'thirdparty/cmp/consent-v3.js', BANNER)
    route(a, 'thirdparty', '/cmp/consent-v3.js', {'delay': 200})
    sub(a, HOME, BODY_END, '<script async src="http://cdn.consently.test/cmp/consent-v3.js"></script>\n' + BODY_END)


def v_hashed_bundle_renamed(b, a):
    for d in (b, a):
        route(d, 'main', '/static/js/app.3f9a2c1b.js', {'delay': 200})
        route(d, 'main', '/static/js/app.77d0e4aa.js', {'delay': 200})
    wr(b, 'main/static/js/app.3f9a2c1b.js', bundle('app', '4.12.0', 900, 60, 1))
    sub(b, HOME, HEAD_END, HEAD_END.replace('</head>', '<script src="/static/js/app.3f9a2c1b.js"></script>\n</head>'))
    wr(a, 'main/static/js/app.77d0e4aa.js', bundle('app', '4.13.0', 4200, 260, 1))
    sub(a, HOME, HEAD_END, HEAD_END.replace('</head>', '<script src="/static/js/app.77d0e4aa.js"></script>\n</head>'))


def v_bundle_split(b, a):
    for d in (b, a):
        for f in ('app.3f9a2c1b.js', 'app.5e8f1a3c.js', 'vendors.b71c09d4.js'):
            route(d, 'main', '/static/js/' + f, {'delay': 200})
    wr(b, 'main/static/js/app.3f9a2c1b.js', bundle('app', '4.12.0', 2000, 80, 1))
    sub(b, HOME, HEAD_END, HEAD_END.replace('</head>', '<script src="/static/js/app.3f9a2c1b.js"></script>\n</head>'))
    # the split: the app keeps its own code, the vendors chunk takes the libraries and a copy of the runtime
    wr(a, 'main/static/js/app.5e8f1a3c.js', bundle('app', '4.12.0+split', 1100, 50, 1))
    wr(a, 'main/static/js/vendors.b71c09d4.js', bundle('vendors', '4.12.0+split', 2600, 150, 2))
    sub(a, HOME, HEAD_END, HEAD_END.replace('</head>', '<script src="/static/js/vendors.b71c09d4.js"></script>\n<script src="/static/js/app.5e8f1a3c.js"></script>\n</head>'))


BLOG = 'main/blog/index.html'


def v_query_changed(b, a):
    imgs = ['post-1.jpg?delay=400', 'post-2.jpg?delay=800', 'post-3.jpg?delay=1200', 'post-4.jpg?delay=1600']
    # before: the four cards use one image-CDN path with a width query each
    q = ['post-1.jpg?w=800&delay=400', 'post-1.jpg?w=640&delay=800', 'post-1.jpg?w=480&delay=1200', 'post-1.jpg?w=320&delay=1600']
    for d in (b, a):
        for old, new in zip(imgs, q):
            sub(d, BLOG, old, new)
    s = rd(a, BLOG)
    start = s.index('    <article class="post">')
    end = s.index('  </div>\n</main>')
    arts = s[start:end].split('    <article class="post">')[1:]
    arts = ['    <article class="post">' + x for x in arts]
    # after: the last three cards swapped (newest first) and the top card's query changed
    arts = [arts[0], arts[3], arts[2], arts[1]]
    s = s[:start] + ''.join(arts) + s[end:]
    s = s.replace('post-1.jpg?w=800&delay=400', 'post-1.jpg?w=800&fmt=avif&delay=2600')
    wr(a, BLOG, s)


CSS2 = ('carousel.css', 'icons.css')


def v_css_render_blocking(b, a):
    for d in (b, a):
        # full libraries, as shipped: ~120 KB each (Lighthouse's simulated load counts their bytes)
        wr(d, 'main/static/css/carousel.css', ''.join('.carousel-%d{display:flex;overflow-x:auto;gap:%dpx;scroll-snap-type:x mandatory}\n' % (i, i % 16) for i in range(1900)))
        wr(d, 'main/static/css/icons.css', ''.join('.icon-%d{display:inline-block;width:16px;height:16px;background-position:-%dpx -%dpx}\n' % (i, i % 40 * 16, i // 40 * 16) for i in range(1600)))
        route(d, 'main', '/static/css/carousel.css', {'delay': 900})
        route(d, 'main', '/static/css/icons.css', {'delay': 1100})
    links = lambda blocking: ''.join(
        '<link rel="stylesheet" href="/static/css/%s"%s>\n' % (f, '' if blocking else ' media="print" onload="this.media=\'all\'"') for f in CSS2)
    sub(b, HOME, HEAD_END, links(False) + HEAD_END)
    sub(a, HOME, HEAD_END, links(True) + HEAD_END)


def v_unchanged(b, a):
    pass


def v_faster(b, a):
    # the hero re-exported at a sensible size (the same picture, 640 px WebP) and its latency gone
    shutil.copy(os.path.join(SITE, 'main/static/img/fast-hero.webp'), os.path.join(a, 'main/static/img/hero-640.webp'))
    sub(a, HOME, 'src="/static/img/hero.jpg"', 'src="/static/img/hero-640.webp"')


def v_gallery(b, a):
    for d in (b, a):
        cards = []
        for i in range(296):
            cards.append('<a class="g" href="#p%d"><img src="/static/img/g/%03d.png" width="64" height="64" alt="Product %d" loading="eager"></a>' % (i, i, i))
        wr(d, 'main/gallery.html', '''<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>All products – Acme Outdoor</title>
<link rel="stylesheet" href="/static/css/main.css">
<script src="/static/js/vendor.js"></script>
<style>.grid{display:flex;flex-wrap:wrap;gap:4px}.g img{display:block}</style>
</head><body>
<header><strong>Acme Outdoor</strong></header>
<main><h1>All products</h1><div class="grid">
%s
</div></main>
<script async src="http://static.hotjar.com/c/hotjar-3412345.js?sv=6"></script>
</body></html>
''' % '\n'.join(cards))
    for i in range(296):
        png(os.path.join(b, 'main/static/img/g/%03d.png' % i), 64, 64, i)
    shutil.copytree(os.path.join(b, 'main/static/img/g'), os.path.join(a, 'main/static/img/g'))


VARIANTS = {
    'heavy-lcp-png': v_heavy_lcp_png,
    'lcp-css-background': v_lcp_css_background,
    'tag-manager-sync': v_tag_manager_sync,
    'font-other-host': v_font_other_host,
    'slow-route': v_slow_route,
    'late-consent-banner': v_late_consent_banner,
    'hashed-bundle-renamed': v_hashed_bundle_renamed,
    'bundle-split': v_bundle_split,
    'query-changed': v_query_changed,
    'css-render-blocking': v_css_render_blocking,
    'unchanged': v_unchanged,
    'faster': v_faster,
    'gallery': v_gallery,
}

if __name__ == '__main__':
    for name, fn in VARIANTS.items():
        if ONLY and name not in ONLY:
            continue
        root = os.path.join(OUT, name)
        shutil.rmtree(root, ignore_errors=True)
        b, a = base(os.path.join(root, 'before')), base(os.path.join(root, 'after'))
        fn(b, a)
        print(name)
