/** Marks a text the page shows cut: how many characters are left out. */
export function CutMark({ more, title }: { more: number; title?: string }) {
  return (
    <span className="cut-mark" data-testid="cut-mark" data-more={more} title={title}>
      … {more.toLocaleString('en')} more {more === 1 ? 'character' : 'characters'}
    </span>
  );
}
